// Package regularfile opens and reads files that arrive from elsewhere (scenarios, traces,
// OpenAPI documents, a tool server's state file) so that neither opening nor reading can block
// or run without end: anything but a regular file (a named pipe without a writer, /dev/zero
// behind a symlink, a socket, a directory) is refused before it is opened and again once open,
// the open never waits on a FIFO swapped in between, and a read is capped in bytes and
// abandoned when its context ends.
//
// It is a leaf: it imports only the standard library.
package regularfile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// NotRegularError is a path that is not a regular file.
type NotRegularError struct {
	Mode os.FileMode
}

func (e *NotRegularError) Error() string { return "not a regular file (" + Kind(e.Mode) + ")" }

// TooLargeError is a file longer than the limit its reader set.
type TooLargeError struct {
	Limit int64
}

func (e *TooLargeError) Error() string { return fmt.Sprintf("larger than %d bytes", e.Limit) }

// Kind names what a file that is not regular is: "a named pipe", "a device", "a directory".
func Kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "mode " + m.String()
}

// Open opens path for reading when it is a regular file (following symbolic links): its kind
// is checked before the open, so a device is never opened, and again on the open file, so a
// FIFO put in its place meanwhile is refused too (the open does not block on it). Errors are
// those of os.Stat and os.OpenFile, or a *NotRegularError. The caller closes the file.
func Open(path string) (*os.File, os.FileInfo, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, nil, &NotRegularError{Mode: info.Mode()}
	}
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	if info, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Mode: info.Mode()}
	}
	return f, info, nil
}

// Read reads all of the regular file at path, at most limit bytes (a longer file is a
// *TooLargeError), and gives up with ctx's error when ctx ends first.
func Read(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, info, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info.Size() > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return ReadAll(ctx, f, limit)
}

// ReadAll reads r to its end, at most limit bytes (more is a *TooLargeError; the size can
// change under a reader, so one byte past the limit is read to tell), and gives up with ctx's
// error when ctx ends first: a file is closed to interrupt a read under way.
func ReadAll(ctx context.Context, r io.Reader, limit int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c, ok := r.(io.Closer); ok {
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		defer stop()
	}
	b, err := readAll(r, limit)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return b, err
}

// ReadSmall reads all of the regular file at path, at most limit bytes (a longer file is a
// *TooLargeError), for a file small enough that reading it needs no way to stop: a scenario,
// a config.
func ReadSmall(path string, limit int64) ([]byte, error) {
	f, info, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info.Size() > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return readAll(f, limit)
}

func readAll(r io.Reader, limit int64) ([]byte, error) {
	// A file is read into a buffer of its size, not one doubled as it fills: a large document
	// would otherwise cost up to three times its size while it is read.
	var buf bytes.Buffer
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if info, err := f.Stat(); err == nil && info.Size() > 0 && info.Size() <= limit {
			buf.Grow(int(info.Size()) + bytes.MinRead)
		}
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	if b == nil {
		b = []byte{}
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return b, nil
}
