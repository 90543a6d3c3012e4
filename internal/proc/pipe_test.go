package proc

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMarkTakesInWhatThePipeHolds writes to the pipe and marks at once, many times: every byte
// written before Mark is counted before it, whether or not the copy loop has read it yet.
func TestMarkTakesInWhatThePipeHolds(t *testing.T) {
	tl, w := pipedTail(t)
	for i := 1; i <= 2000; i++ {
		if _, err := w.WriteString("x"); err != nil {
			t.Fatal(err)
		}
		if got := tl.Mark(); got != int64(i) {
			t.Fatalf("Mark after %d bytes written = %d", i, got)
		}
	}
}

// TestSinceSeesTheLastLine: the line a process wrote just before the report is in Since.
func TestSinceSeesTheLastLine(t *testing.T) {
	tl, w := pipedTail(t)
	for i := 0; i < 500; i++ {
		mark := tl.Mark()
		w.WriteString("served one call\n")
		if got := tl.Since(mark); got != "served one call\n" {
			t.Fatalf("round %d: Since = %q", i, got)
		}
	}
}

// pipedTail returns a Tail reading a pipe and the pipe's write end, both closed at the end of t.
func pipedTail(t *testing.T) (*Tail, *os.File) {
	t.Helper()
	tl := NewTail(1 << 10)
	w, err := tl.Writer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); tl.Close() })
	return tl, w
}

// TestWriterFromAProcess gives the pipe to a real process: its output is all there once it has
// exited, and Close returns after end of file.
func TestWriterFromAProcess(t *testing.T) {
	tl := NewTail(1 << 10)
	w, err := tl.Writer()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "echo to stdout; echo to stderr >&2")
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := tl.String(); got != "to stdout\nto stderr\n" {
		t.Errorf("String = %q", got)
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.Writer(); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("a second Writer: err = %v, want a refusal", err)
	}
}

// TestCloseWhileAWriterLives: a descendant that keeps the pipe open does not hold Close, and
// what it wrote before is kept.
func TestCloseWhileAWriterLives(t *testing.T) {
	tl := NewTail(1 << 10)
	w, err := tl.Writer()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.WriteString("before close\n")
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	w.WriteString("after close\n")
	if got := tl.String(); got != "before close\n" {
		t.Errorf("String = %q", got)
	}
	if err := tl.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}
