package proxy

import (
	"os/exec"
	"syscall"
	"time"
)

// The process-group handling of the upstream server lives here alone, to be swapped for the
// shared one when there is one.

// startGroup starts cmd as the leader of a process group of its own, so that everything it
// starts can be stopped with it.
func startGroup(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Start()
}

// stopGroup sends SIGTERM to cmd's process group, SIGKILL after grace, and returns once the
// leader has been reaped (exited is closed by whoever calls cmd.Wait).
func stopGroup(cmd *exec.Cmd, exited <-chan struct{}, grace time.Duration) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
	}
	// Whatever is left of the group (the leader exited, a child may not have) is killed.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-exited
}
