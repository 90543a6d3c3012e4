package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterrupt sends Ctrl-C (SIGINT) to a run in the middle of a scenario: the services must
// be stopped, the reports written for what finished, and the exit code 130.
func TestInterrupt(t *testing.T) {
	bin := buildRefundServer(t)
	dir := t.TempDir()
	idemtest := filepath.Join(dir, "idemtest")
	if out, err := exec.Command("go", "build", "-o", idemtest, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	pidFile := filepath.Join(dir, "svc.pid")
	scenario := `name: long
services:
  refunds:
    command: [sh, -c, "echo $$ > ` + pidFile + `; exec refundserver --addr 127.0.0.1:{{ port }}"]
    ready: {http: "http://127.0.0.1:{{ port }}/healthz", timeout: 30s}
endpoints:
  e:
    http: {url: "http://127.0.0.1:{{ services.refunds.port }}/tools/{tool}"}
steps:
  - call_tool: issue_refund
    args: {accountId: a, amount: 1}
  - sleep: 60s
`
	if err := os.WriteFile(filepath.Join(dir, "long.yaml"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(dir, "report.xml")
	c := exec.Command(idemtest, "run", "--no-color", "--junit", junit, "long.yaml")
	c.Dir = dir
	c.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out strings.Builder
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()

	var pid int
	deadline := time.Now().Add(30 * time.Second)
	for pid == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("service never started; output:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
		b, err := os.ReadFile(pidFile)
		if err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	time.Sleep(time.Second) // into the sleep step
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("idemtest did not stop within 15s of SIGINT; output:\n%s", out.String())
	}
	if code := c.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit code %d, want 130; output:\n%s", code, out.String())
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("service process %d still running after the interrupt", pid)
	}
	if _, err := os.Stat(junit); err != nil {
		t.Errorf("no JUnit report after the interrupt: %v", err)
	}
	if !strings.Contains(out.String(), "interrupted") {
		t.Errorf("summary does not say the run was interrupted:\n%s", out.String())
	}
}
