//go:build unix

package proc

import (
	"syscall"
	"time"
)

// drain copies into the Tail whatever the pipe holds at this instant, without waiting for more.
func (t *Tail) drain(p *pipe) {
	p.markMu.Lock()
	defer p.markMu.Unlock()
	// A deadline in the past wakes the copy loop's blocked read, so that readMu comes free.
	_ = p.r.SetReadDeadline(time.Unix(1, 0))
	p.readMu.Lock()
	defer p.readMu.Unlock()
	if p.closed {
		return
	}
	_ = p.r.SetReadDeadline(time.Time{})
	rc, err := p.r.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 32<<10)
	_ = rc.Read(func(fd uintptr) bool {
		for {
			n, err := syscall.Read(int(fd), buf)
			if n > 0 {
				_, _ = t.Write(buf[:n])
			}
			if err == syscall.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				return true // EAGAIN: the pipe is empty; end of file: the copy loop sees it next
			}
		}
	})
}
