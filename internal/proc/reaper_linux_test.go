package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/testenv"
)

// TestStopChildrenFindsEscapedDescendants starts a process whose child leaves its process group
// (setsid) and outlives it: as subreaper, StopChildren still finds and stops it.
func TestStopChildrenFindsEscapedDescendants(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	if err := BecomeSubreaper(); err != nil {
		t.Fatalf("BecomeSubreaper: %v", err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("sh", "-c", `setsid sleep 1000 & echo $! > `+pidFile)
	Isolate(cmd)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	// The shell has exited: the sleep, in a session of its own, is an orphan now.
	got := StopChildren(5 * time.Second)
	found := false
	for _, p := range got {
		found = found || p == pid
	}
	if !found {
		t.Errorf("StopChildren signalled %v, not the escaped descendant %d", got, pid)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("escaped descendant %d still exists after StopChildren", pid)
	}
}

// TestStopGroup stops a process and the child it started, which stays in its group.
func TestStopGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The shell ignores SIGTERM, so only the SIGKILL after the grace period ends it.
	cmd := exec.Command("sh", "-c", `trap '' TERM; sleep 1000 & echo $! > `+pidFile+`; wait`)
	Isolate(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var child int
	testenv.Eventually(t, time.Minute, func() bool {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return child != 0
	}, "the child started")
	Stop(cmd.Process.Pid, done, 100*time.Millisecond)
	gone := testenv.Until(time.Minute, func() bool {
		if syscall.Kill(child, 0) != nil {
			return true
		}
		// The killed sleep is the shell's child; until the shell's exit hands it to init (or to
		// a subreaper) and it is reaped, it lingers as a zombie.
		st, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		return err == nil && strings.Contains(string(st), ") Z ")
	})
	if !gone {
		t.Errorf("the group's child %d survived Stop", child)
	}
}

// TestExited: a child that has exited is told apart from a live one before anyone waits for
// it, and Exited does not reap it (the Wait after still gets its status).
func TestExited(t *testing.T) {
	live := exec.Command("sleep", "1000")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.Process.Kill(); _ = live.Wait() }()
	if Exited(live.Process.Pid) {
		t.Error("a sleeping child reads as exited")
	}
	gone := exec.Command("sh", "-c", "exit 3")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	stat := "/proc/" + strconv.Itoa(gone.Process.Pid) + "/stat"
	testenv.Eventually(t, time.Minute, func() bool {
		b, err := os.ReadFile(stat)
		return err == nil && strings.Contains(string(b), ") Z ")
	}, "the exited child is a zombie")
	if !Exited(gone.Process.Pid) {
		t.Error("an exited child reads as running")
	}
	if err := gone.Wait(); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Wait after Exited: %v, want exit status 3", err)
	}
}
