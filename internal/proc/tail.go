package proc

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
)

// Tail keeps the last bytes of a process's output, for reports, and tells whether a line
// matching a watched pattern was ever written (a service's ready.log). A write costs time in
// proportion to its own length and the memory stays bounded, whatever the process prints: a
// process that never prints a newline costs as little as one that does.
type Tail struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	watch *regexp.Regexp
	// line is the start of the line being written (at most limit bytes); long is set once the
	// line has outgrown it, and the rest of the line is dropped.
	line    []byte
	long    bool
	matched bool
	// written counts every byte ever written, kept or not: a mark of what came before.
	written int64
	// pipe is set by Writer: Mark, Since and String first take in what it holds.
	pipe *pipe
}

// NewTail returns a Tail that keeps the last limit bytes (16 KiB when limit is 0 or less).
func NewTail(limit int) *Tail {
	if limit <= 0 {
		limit = 16 << 10
	}
	return &Tail{limit: limit}
}

// Watch records from now on whether a written line matches re. Call it before the process
// starts, so that no line is missed.
func (t *Tail) Watch(re *regexp.Regexp) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.watch, t.matched = re, false
}

// Matched reports whether a line matching the watched pattern was written; the line being
// written counts too, so that a prompt without a newline is seen.
func (t *Tail) Matched() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.matched || (t.watch != nil && t.watch.Match(t.line))
}

// Write keeps the last bytes of p and checks its complete lines against the watched pattern.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.written += int64(n)
	if t.watch != nil && !t.matched {
		t.scan(p)
	}
	if len(p) > t.limit {
		p = p[len(p)-t.limit:]
	}
	if len(t.buf)+len(p) > t.limit {
		// Slide what stays to the front instead of reslicing, so the buffer never grows.
		keep := t.limit - len(p)
		copy(t.buf, t.buf[len(t.buf)-keep:])
		t.buf = t.buf[:keep]
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// scan feeds p's lines to the watched pattern; t.mu is held.
func (t *Tail) scan(p []byte) {
	for len(p) > 0 && !t.matched {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		if !t.long {
			if room := t.limit - len(t.line); len(seg) > room {
				seg, t.long = seg[:room], true
			}
			t.line = append(t.line, seg...)
		}
		if i < 0 {
			return
		}
		t.matched = t.watch.Match(t.line)
		t.line, t.long = t.line[:0], false
		p = p[i+1:]
	}
}

// String returns the kept output.
func (t *Tail) String() string {
	t.flush()
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Mark is a position in the output: what Since(mark) later returns starts after it.
func (t *Tail) Mark() int64 {
	t.flush()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written
}

// Since returns the kept output written after mark (all that is kept when more was written
// since than the Tail keeps), so that a report shows what a process wrote while one trial ran.
func (t *Tail) Since(mark int64) string {
	t.flush()
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.written - mark
	if k <= 0 {
		return ""
	}
	if k >= int64(len(t.buf)) {
		return string(t.buf)
	}
	return string(t.buf[int64(len(t.buf))-k:])
}

// flush takes in what the pipe of Writer holds, if the Tail has one.
func (t *Tail) flush() {
	t.mu.Lock()
	p := t.pipe
	t.mu.Unlock()
	if p != nil {
		t.drain(p)
	}
}

// LastBytes returns the last n bytes of s from the start of a line (or all of s when it is no
// longer): what a failure report shows of a process's output.
func LastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
