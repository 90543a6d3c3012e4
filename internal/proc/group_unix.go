//go:build unix

package proc

import (
	"os/exec"
	"syscall"
	"time"
)

// Isolate makes cmd start in a process group of its own, so that stopping the group also stops
// what the process started (go run's child, a shell's pipeline) and a Ctrl-C typed at the
// terminal reaches idemtest only, which then stops the group itself.
// It also bounds cmd.Wait: a descendant that left the group (setsid) and kept the output pipe
// open would otherwise hold Wait, and the stop, until it exits.
func Isolate(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = pipeGrace
	}
}

// pipeGrace is how long Wait waits for the output pipes to close after the process exited.
const pipeGrace = time.Second

// Stop ends the process group led by pid: SIGTERM, then SIGKILL when exited is not closed
// within grace. It returns once exited is closed (the leader has been waited for).
func Stop(pid int, exited <-chan struct{}, grace time.Duration) {
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

// Kill sends SIGKILL to the process group led by pid.
func Kill(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
