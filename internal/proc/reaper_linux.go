package proc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes this process the reaper of its orphaned descendants: a process started
// by a service that left the service's group (setsid) and outlived its parent is re-parented
// to idemtest instead of init, so StopChildren still finds it.
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// children lists the processes whose parent is this one, from /proc.
func children() []int {
	self := os.Getpid()
	var out []int
	for pid, ppid := range parents() {
		if ppid == self && pid != self {
			out = append(out, pid)
		}
	}
	return out
}

// parents maps every process in /proc to its parent.
func parents() map[int]int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the
		// last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(string(f[1])); err == nil {
			out[pid] = ppid
		}
	}
	return out
}

// StopChildren stops every process that is still a child of this one (those idemtest started
// and did not wait for, and descendants re-parented to it as subreaper): SIGTERM to each and to
// the group it leads, SIGKILL after grace, each reaped. Descendants re-parented while this runs
// are handled too. It is meant for the end of the program, after every child idemtest waits
// for itself has been stopped; it returns the pids it signalled.
func StopChildren(grace time.Duration) []int {
	return sweep(syscall.SIGTERM, grace)
}

// KillChildren is StopChildren without the grace period: SIGKILL at once (a second Ctrl-C).
func KillChildren() []int {
	return sweep(syscall.SIGKILL, 0)
}

func sweep(first syscall.Signal, grace time.Duration) []int {
	var signalled []int
	seen := map[int]bool{}
	killAt := time.Now().Add(grace)
	// A SIGKILLed process dies at once unless it is stuck in the kernel; give up after that.
	giveUp := killAt.Add(2 * time.Second)
	killed := first == syscall.SIGKILL
	for {
		pids := children()
		for _, pid := range pids {
			if !seen[pid] {
				seen[pid] = true
				signalled = append(signalled, pid)
				_ = syscall.Kill(-pid, first)
				_ = syscall.Kill(pid, first)
			}
		}
		live := 0
		for _, pid := range pids {
			var ws unix.WaitStatus
			if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); got == pid || err != nil {
				continue
			}
			live++
		}
		now := time.Now()
		if live == 0 && len(pids) == 0 || now.After(giveUp) {
			return signalled
		}
		if !killed && now.After(killAt) {
			killed = true
			for pid := range seen {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			// Processes re-parented from now on are killed at once too.
			first = syscall.SIGKILL
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Exited reports whether the child pid has exited, whether or not it has been waited for yet:
// a caller that asks right after the child died is told so, without racing the goroutine that
// waits for it. A child's pid is not reused before its parent reaps it, so /proc tells: a
// zombie has exited, a pid that is gone has been reaped.
func Exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+3 > len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}
