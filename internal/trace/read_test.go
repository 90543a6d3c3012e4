package trace

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testHeader = `{"idemtest_trace":1,"endpoint":"x","transport":"mcp-stdio"}`

// A line over the bound is refused while it is read, with the line named, and the reader has
// read little more than the bound by then: an endless line does not exhaust memory.
func TestReadRefusesLongLineWhileReading(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		want  string
	}{
		{"small bound", 1000, "3:1001: line 3 is over 1000 bytes: a trace line holds at most 1000 bytes"},
		{"MaxLine", MaxLine, "3:67108865: line 3 is over 64 MiB: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := testHeader + "\n" + `{"seq":1,"tool":"t"}` + "\n" + `{"seq":2,"tool":"t","result":"`
			cr := &countingReader{r: io.MultiReader(strings.NewReader(head), endless('x'))}
			_, calls, err := read(context.Background(), cr, tc.limit)
			var pe *PosError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) || pe.Line != 3 {
				t.Fatalf("err = %.200v, want a *PosError on line 3 containing %q", err, tc.want)
			}
			if len(calls) != 1 {
				t.Errorf("read %d calls before the long line, want 1", len(calls))
			}
			if limit := int64(len(head) + tc.limit + 128<<10); cr.n > limit {
				t.Errorf("read %d bytes of an endless line, want at most %d", cr.n, limit)
			}
		})
	}
}

// The longest line a writer may emit (MaxLine bytes) is read, not refused.
func TestReadLineOfMaxLine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a 64 MiB line")
	}
	prefix, suffix := `{"seq":1,"tool":"t","result":"`, `"}`
	line := prefix + strings.Repeat("x", MaxLine-len(prefix)-len(suffix)) + suffix
	_, calls, err := Read(context.Background(), strings.NewReader(testHeader+"\n"+line+"\n"))
	if err != nil {
		t.Fatalf("%.200v", err)
	}
	if len(calls) != 1 || len(calls[0].Result) != MaxLine-len(prefix)-len(suffix)+2 {
		t.Errorf("calls = %d", len(calls))
	}
}

// Reading stops when its context is done, though the trace goes on.
func TestReadStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	lines := &cancelAfter{line: []byte(`{"seq":1,"tool":"t"}` + "\n"), n: 1000, cancel: cancel}
	_, _, err := Read(ctx, io.MultiReader(strings.NewReader(testHeader+"\n"), lines))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// What is not a regular file is refused before it is read, at once: a named pipe without a
// writer (which would block), a device (which would never end), a directory.
func TestReadFileRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	zero := filepath.Join(dir, "zero.jsonl")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"named pipe", fifo, "not a regular file (a named pipe)"},
		{"device", zero, "not a regular file (a device)"},
		{"directory", dir, "not a regular file (a directory)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, _, err := ReadFile(context.Background(), tc.path)
				done <- err
			}()
			select {
			case err := <-done:
				var fe *FileError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err = %v, want a *FileError containing %q", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				// Not a timing assertion: a reader that opens the pipe waits for ever.
				t.Fatal("ReadFile still reading after 10s")
			}
		})
	}
}

// A header after blank lines is still the header; a trace of blank lines has none.
func TestReadHeaderFirstNonBlankLine(t *testing.T) {
	h, calls, err := Read(context.Background(), strings.NewReader("\n\n"+testHeader+"\n"+`{"seq":1,"tool":"t"}`+"\n"))
	if err != nil || h.Endpoint != "x" || len(calls) != 1 {
		t.Errorf("h = %+v, calls = %d, err = %v", h, len(calls), err)
	}
	if _, _, err := Read(context.Background(), strings.NewReader("\n \n")); err == nil || !strings.Contains(err.Error(), "empty trace") {
		t.Errorf("err = %v, want empty trace", err)
	}
	if _, _, err := Read(context.Background(), strings.NewReader("\n"+`{"seq":1}`+"\n")); err == nil || !strings.HasPrefix(err.Error(), "2:1: not an idemtest trace") {
		t.Errorf("err = %v, want 2:1: not an idemtest trace", err)
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// endless is a reader of one byte repeated for ever.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// cancelAfter repeats line n times, then cancels and goes on repeating it for ever.
type cancelAfter struct {
	line   []byte
	n      int
	cancel func()
	buf    bytes.Buffer
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.buf.Len() == 0 {
		if c.n--; c.n == 0 {
			c.cancel()
		}
		c.buf.Write(c.line)
	}
	return c.buf.Read(p)
}
