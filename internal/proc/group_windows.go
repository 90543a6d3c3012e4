//go:build windows

package proc

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Isolate starts cmd in a console process group of its own (CREATE_NEW_PROCESS_GROUP), so that
// a Ctrl-C typed at the console reaches idemtest only, which then stops the process itself. It
// also bounds cmd.Wait, as on Unix. Windows has no process group idemtest can signal: Stop and
// Kill end the process idemtest started, not what it started in turn.
func Isolate(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= syscall.CREATE_NEW_PROCESS_GROUP
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = pipeGrace
	}
}

// pipeGrace is how long Wait waits for the output pipes to close after the process exited.
const pipeGrace = time.Second

// Stop ends the process pid: Windows has no SIGTERM to ask it first, so it is terminated at
// once (TerminateProcess); grace is not used. A process it started survives it. It returns
// once exited is closed (the process has been waited for).
func Stop(pid int, exited <-chan struct{}, _ time.Duration) {
	Kill(pid)
	<-exited
}

// Kill terminates the process pid (not its descendants: Windows has no process group to kill).
func Kill(pid int) {
	if pid <= 0 {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
		_ = p.Release()
	}
}
