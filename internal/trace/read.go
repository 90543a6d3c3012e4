package trace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/idemtest/idemtest/internal/regularfile"
)

// ReadFile reads the trace in the file at path: a regular file, refused before a byte is
// read when it is a named pipe, a device, a socket or a directory (so that reading neither
// blocks nor runs without end). Reading stops when ctx is done.
func ReadFile(ctx context.Context, path string) (Header, []Call, error) {
	f, _, err := regularfile.Open(path)
	var nr *regularfile.NotRegularError
	if errors.As(err, &nr) {
		return Header{}, nil, &FileError{nr.Error() + ": a trace is a file written by idemtest proxy --record or idemtest run --trace; copy it to a file first"}
	}
	if err != nil {
		return Header{}, nil, err
	}
	defer f.Close()
	return Read(ctx, f)
}

// FileError is a path that is no trace file at all: not a regular file.
type FileError struct{ Msg string }

func (e *FileError) Error() string { return e.Msg }

// Read reads a whole trace, line by line, holding at most one line of MaxLine bytes at a
// time, and stops with ctx's error when ctx is done. Errors in the trace are *PosError naming
// the line and column.
func Read(ctx context.Context, r io.Reader) (Header, []Call, error) {
	return read(ctx, r, MaxLine)
}

// read is Read with the longest line as a parameter, so tests can reach the bound.
func read(ctx context.Context, r io.Reader, maxLine int) (Header, []Call, error) {
	var h Header
	var calls []Call
	err := scan(ctx, r, maxLine, func(hd Header) error { h = hd; return nil }, func(_ int, c Call) error {
		calls = append(calls, c)
		return nil
	})
	var pe *PosError
	if errors.As(err, &pe) && pe.Msg == noHeader {
		return h, nil, err
	}
	return h, calls, err
}

// noHeader is the error of a trace without a header line.
const noHeader = "empty trace: no header"

// Scan reads a trace line by line as Read does, but hands each call to onCall with its
// line number as it is read instead of keeping them, so that a reader of a long trace holds
// one line at a time (idemtest audit). onHeader is called once, before any call. An error from
// either callback ends the scan and is returned as it is.
func Scan(ctx context.Context, r io.Reader, onHeader func(Header) error, onCall func(line int, c Call) error) error {
	return scan(ctx, r, MaxLine, onHeader, onCall)
}

func scan(ctx context.Context, r io.Reader, maxLine int, onHeader func(Header) error, onCall func(int, Call) error) error {
	lr := &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: maxLine}
	header := false
	for {
		raw, err := lr.next(ctx)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if line := bytes.TrimSpace(raw); len(line) > 0 {
			switch {
			case !header:
				var h Header
				if err := readHeader(lr.n, line, &h); err != nil {
					return err
				}
				header = true
				if err := onHeader(h); err != nil {
					return err
				}
			default:
				c, err := readCall(lr.n, line)
				if err != nil {
					return err
				}
				if err := onCall(lr.n, c); err != nil {
					return err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if !header {
		return &PosError{1, 1, noHeader}
	}
	return nil
}

// lineReader reads lines of at most max bytes (the newline not counted), never buffering more
// than that and its reader's buffer.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
	n   int // the number of the line last returned, from 1
}

// next returns the next line without its newline, and io.EOF with the last one. The line is
// valid until the next call.
func (lr *lineReader) next(ctx context.Context) ([]byte, error) {
	lr.n++
	lr.buf = lr.buf[:0]
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		chunk, err := lr.br.ReadSlice('\n')
		chunk = bytes.TrimSuffix(chunk, []byte("\n"))
		if len(lr.buf)+len(chunk) > lr.max {
			return nil, &PosError{lr.n, lr.max + 1, fmt.Sprintf("line %d is over %s: a trace line holds at most %s (one call with its arguments and answer); record the session again with an idemtest that keeps lines within it", lr.n, size(lr.max), size(lr.max))}
		}
		lr.buf = append(lr.buf, chunk...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && !errors.Is(err, io.EOF):
			return nil, &PosError{lr.n, len(lr.buf) + 1, "read: " + err.Error()}
		}
		return lr.buf, err
	}
}

// size writes a byte count as MiB when it is whole MiB.
func size(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readHeader decodes line n, the trace's first line that is not blank, as its header.
func readHeader(n int, line []byte, h *Header) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(line, &probe); err != nil {
		return jsonError(n, line, err)
	}
	if _, ok := probe["idemtest_trace"]; !ok {
		return &PosError{n, 1, `not an idemtest trace (no "idemtest_trace" header)`}
	}
	if err := json.Unmarshal(line, h); err != nil {
		return jsonError(n, line, err)
	}
	if h.Version != Version {
		return &PosError{n, valueCol(line, "idemtest_trace"), fmt.Sprintf("version %d, this idemtest reads version %d", h.Version, Version)}
	}
	return nil
}
