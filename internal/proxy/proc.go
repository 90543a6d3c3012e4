package proxy

import (
	"os/exec"
	"syscall"
	"time"
)

// The process-group handling of the upstream server lives here alone, in the shape of the
// shared internal/proc (Isolate, Stop), to be swapped for it when it lands.

// isolate makes cmd start as the leader of a process group of its own, so that everything it
// starts can be stopped with it, and bounds Wait when a descendant keeps an output pipe open.
func isolate(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = time.Second
	}
}

// stopGroup sends SIGTERM to the process group led by pid, SIGKILL after grace, and returns
// once exited is closed (the leader has been waited for).
func stopGroup(pid int, exited <-chan struct{}, grace time.Duration) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
	}
	// Whatever is left of the group (the leader exited, a child may not have) is killed.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
}
