//go:build unix

package proxy_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/testenv"
)

// TestStdioProxyStopsServerGroup ends the proxy both ways an agent ends it and checks that the
// server's whole process group is gone, a grandchild included.
func TestStdioProxyStopsServerGroup(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"agent disconnects", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			c := exec.Command(self, "proxy", "--", "sh", "-c", `sleep 300 & echo $! > "$0"; cat >/dev/null`, pidFile)
			c.Env = append(os.Environ(), "IDEMTEST_PROXY_TEST_MAIN=1")
			stdin, err := c.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stderr := &lockedBuffer{b: &bytes.Buffer{}}
			c.Stderr = stderr
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { _ = c.Wait(); close(done) }()
			var pid int
			started := testenv.Until(time.Minute, func() bool {
				if b, err := os.ReadFile(pidFile); err == nil {
					fmt.Sscan(string(b), &pid)
				}
				return pid != 0
			})
			if !started {
				t.Fatalf("the server never started its grandchild:\n%s", stderr)
			}
			if how == "SIGTERM" {
				_ = c.Process.Signal(syscall.SIGTERM)
			} else {
				_ = stdin.Close()
			}
			select {
			case <-done:
			case <-time.After(time.Minute):
				_ = c.Process.Kill()
				t.Fatalf("the proxy did not exit:\n%s", stderr)
			}
			// The agent never said a word: nothing to judge, and no fault of the server's.
			if code := c.ProcessState.ExitCode(); code != 0 || !strings.Contains(stderr.String(), "nothing judged: the agent made no tool call") {
				t.Errorf("exit %d, stderr:\n%s", code, stderr)
			}
			if !testenv.Until(time.Minute, func() bool { return !alive(pid) }) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("grandchild %d outlived the proxy", pid)
			}
		})
	}
}

// alive reports whether a process exists and is not a zombie waiting to be reaped by whoever
// inherited it.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
