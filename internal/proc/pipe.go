package proc

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// pipe is the read end of a pipe whose bytes a Tail copies in itself, so that Mark can take in
// what a process has written up to that instant. With exec's own copy (cmd.Stdout = tail) a line
// written just before an answer can still sit in the pipe when the next trial marks the output,
// and would then be shown as that trial's.
type pipe struct {
	r *os.File
	// markMu serializes drains; the copy loop waits on it after a drain interrupted its read.
	markMu sync.Mutex
	// readMu is held around every read of r, by the copy loop and by a drain.
	readMu sync.Mutex
	closed bool // r is closed; set under readMu
	done   chan struct{}
}

// Writer returns the write end of a pipe the Tail reads: give it to a process as its standard
// output and error, and close it in the parent once the process has started. The Tail copies
// until every writer has closed it or Close is called. A Tail has at most one such pipe.
func (t *Tail) Writer() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p := &pipe{r: r, done: make(chan struct{})}
	t.mu.Lock()
	if t.pipe != nil {
		t.mu.Unlock()
		r.Close()
		w.Close()
		return nil, errors.New("proc: the Tail already reads a pipe")
	}
	t.pipe = p
	t.mu.Unlock()
	go t.copyFrom(p)
	return w, nil
}

// copyFrom copies the pipe into the Tail until end of file or Close.
func (t *Tail) copyFrom(p *pipe) {
	defer close(p.done)
	buf := make([]byte, 32<<10)
	for {
		p.readMu.Lock()
		if p.closed {
			p.readMu.Unlock()
			return
		}
		n, err := p.r.Read(buf)
		if n > 0 {
			_, _ = t.Write(buf[:n])
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			p.closed = true
			p.r.Close()
			p.readMu.Unlock()
			return
		}
		p.readMu.Unlock()
		if err != nil {
			// A drain interrupted the read: wait until it is over instead of spinning on the
			// deadline it set.
			p.markMu.Lock()
			p.markMu.Unlock() //nolint:staticcheck // an empty critical section: waiting is the point
		}
	}
}

// Close stops reading the pipe of Writer, once what it holds now has been copied; what a
// process writes later is lost. It waits for the copy to end and does nothing for a Tail without
// a pipe.
func (t *Tail) Close() error {
	t.mu.Lock()
	p := t.pipe
	t.mu.Unlock()
	if p == nil {
		return nil
	}
	t.drain(p)
	p.markMu.Lock()
	_ = p.r.SetReadDeadline(time.Unix(1, 0))
	p.readMu.Lock()
	if !p.closed {
		p.closed = true
		p.r.Close()
	}
	p.readMu.Unlock()
	p.markMu.Unlock()
	<-p.done
	return nil
}

var _ io.Closer = (*Tail)(nil)
