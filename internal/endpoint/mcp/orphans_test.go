//go:build linux

package mcp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/testenv"
)

// holdEnv makes TestHoldMCPServer start a stdio MCP server marked with its value and wait to be
// killed.
const holdEnv = "IDEMTEST_TEST_HOLD_MCP"

// TestHoldMCPServer is the idemtest that TestMCPServerDiesWithIdemtest kills: it starts a stdio
// MCP server that spawns stubborn processes, calls a tool, says so and waits.
func TestHoldMCPServer(t *testing.T) {
	marker := os.Getenv(holdEnv)
	if marker == "" {
		t.Skip("run by TestMCPServerDiesWithIdemtest")
	}
	ep := New(Config{
		Command: []string{os.Args[0]},
		Env:     []string{"ENDPOINT_TEST_MCP_SERVER=1", "ENDPOINT_TEST_MCP_SPAWN=1", "IDEMTEST_MARKER=" + marker},
	})
	if res := ep.Call(context.Background(), endpoint.Request{Tool: "echo", Key: "k"}); res.Outcome != outcome.OK {
		t.Fatalf("call: %s %s", res.Outcome, res.Error)
	}
	fmt.Println("mcp server started")
	select {}
}

// TestMCPServerDiesWithIdemtest: when idemtest is killed with SIGKILL, with no chance to close
// its session, nothing of a stdio MCP server survives it: not the server, not its children that
// ignore SIGTERM, not the daemons that left their session.
func TestMCPServerDiesWithIdemtest(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("needs /proc")
	}
	marker := fmt.Sprintf("mcp-orphans-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		for _, pid := range testenv.Marked(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	held := exec.Command(os.Args[0], "-test.run=^TestHoldMCPServer$", "-test.count=1")
	held.Env = append(os.Environ(), holdEnv+"="+marker)
	out, err := held.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	held.Stderr = os.Stderr
	if err := held.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	started := false
	for !started && lines.Scan() {
		started = strings.Contains(lines.Text(), "mcp server started")
	}
	if !started {
		_ = held.Process.Kill()
		_ = held.Wait()
		t.Fatal("the mcp server never started")
	}
	// The server, its shell, the setsid daemon's shell and sleep, the subshell
	// and its sleep: wait until each has started, since the answer can come first.
	const want = 6
	var before []int
	testenv.Until(time.Minute, func() bool { before = testenv.Marked(marker); return len(before) >= want })
	if len(before) < want {
		_ = held.Process.Kill()
		t.Fatalf("%d marked processes before the kill, want at least %d", len(before), want)
	}
	if err := held.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = held.Wait()
	var left []int
	if testenv.Until(time.Minute, func() bool { left = testenv.Marked(marker); return len(left) == 0 }) {
		return
	}
	var desc []string
	for _, pid := range left {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		desc = append(desc, fmt.Sprintf("%d %q", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	t.Errorf("%d of %d processes outlived idemtest's SIGKILL:\n%s", len(left), len(before), strings.Join(desc, "\n"))
}
