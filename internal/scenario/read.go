package scenario

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
)

// LoadContext is Load that gives up when ctx is done (Ctrl-C): it returns ctx's error at once
// and the decoding it walks away from stops at the next file.
func LoadContext(ctx context.Context, paths []string, opts Options) ([]*Scenario, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type result struct {
		list []*Scenario
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		list, err := load(ctx, paths, opts)
		ch <- result{list, err}
	}()
	select {
	case r := <-ch:
		return r.list, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fileError is a file idemtest will not read, with what to do about it.
type fileError struct {
	msg, hint string
}

func (e *fileError) Error() string { return e.msg }

// readFile reads a scenario or config file: a regular file of at most maxFileSize bytes. A
// named pipe, a device (a symlink to /dev/zero), a socket or a directory is refused before any
// byte is read, so that loading neither blocks nor reads without end.
func readFile(path string) ([]byte, error) {
	// O_NONBLOCK: opening a named pipe that has no writer must not wait for one.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &fileError{msg: "not a regular file (" + fileKind(info.Mode()) + ")",
			hint: "scenario and config files are regular YAML files; remove it or rename it to something other than *.yaml"}
	}
	if info.Size() > maxFileSize {
		return nil, tooLarge()
	}
	// The size can change under us: read one byte past the limit to tell.
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, tooLarge()
	}
	return data, nil
}

func tooLarge() error {
	return &fileError{msg: fmt.Sprintf("file is larger than %d MiB", maxFileSize>>20), hint: "split it into several scenario files"}
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// hasTopLevelKey reports whether the first YAML document in data has key at the top level of
// its mapping, from the lines alone, in one pass: every top-level key of a block mapping starts
// at the indentation of the first one, and nothing else does but continuation lines of quoted
// or flow values. It errs towards true (a flow-style document is answered by whether the
// word appears at all): a file it keeps is decoded, and its errors reported.
func hasTopLevelKey(data []byte, key string) bool {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	all := data
	indent := -1
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimRight(line, "\r")
		trimmed := bytes.TrimLeft(line, " ")
		if len(trimmed) == 0 || trimmed[0] == '#' {
			continue
		}
		n := len(line) - len(trimmed)
		if indent < 0 {
			if trimmed[0] == '%' || bytes.Equal(bytes.TrimRight(trimmed, " \t"), []byte("---")) {
				continue
			}
			trimmed = bytes.TrimLeft(bytes.TrimPrefix(trimmed, []byte("--- ")), " ")
			if trimmed[0] == '{' || trimmed[0] == '!' || trimmed[0] == '&' {
				return bytes.Contains(all, []byte(key))
			}
			indent = n
		}
		if n != indent {
			continue
		}
		if n == 0 && (bytes.HasPrefix(trimmed, []byte("---")) || bytes.HasPrefix(trimmed, []byte("..."))) {
			return false // the first document ended
		}
		for _, q := range []string{key, `"` + key + `"`, `'` + key + `'`} {
			if rest, ok := bytes.CutPrefix(trimmed, []byte(q)); ok {
				rest = bytes.TrimLeft(rest, " \t")
				if len(rest) > 0 && rest[0] == ':' && (len(rest) == 1 || rest[1] == ' ' || rest[1] == '\t') {
					return true
				}
			}
		}
	}
	return false
}
