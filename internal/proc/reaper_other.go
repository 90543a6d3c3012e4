//go:build !linux

package proc

import (
	"os/exec"
	"time"
)

// BecomeSubreaper is only possible on Linux; elsewhere descendants that left their process
// group are not found.
func BecomeSubreaper() error { return nil }

// StopChildren needs /proc; elsewhere the process groups stopped by their owners are all.
func StopChildren(time.Duration) []int { return nil }

// KillChildren needs /proc; elsewhere it does nothing.
func KillChildren() []int { return nil }

// Exited is only known on Linux without waiting; elsewhere the caller's own wait tells.
func Exited(int) bool { return false }

// Shepherd needs a subreaper; elsewhere a command is started as it is, and what it started
// outlives an idemtest that is killed.
func Shepherd(*exec.Cmd) error { return nil }
