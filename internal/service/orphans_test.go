//go:build unix

package service

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"context"

	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/testenv"
)

// holdEnv makes TestHoldServices start services marked with its value and wait to be killed.
const holdEnv = "IDEMTEST_TEST_HOLD_SERVICES"

// TestHoldServices is the idemtest that TestServicesDieWithIdemtest kills: it starts a service
// with two replicas, each a shell that ignores SIGTERM, with a child that ignores it too and a
// daemon that left its session (setsid), says so and waits.
func TestHoldServices(t *testing.T) {
	marker := os.Getenv(holdEnv)
	if marker == "" {
		t.Skip("run by TestServicesDieWithIdemtest")
	}
	sc := scenarioWith(t, []string{"sh", "-c",
		`trap '' TERM; setsid sh -c "trap '' TERM; sleep 1000; :" & (trap '' TERM; sleep 1000; :) & echo replica {{ replica }} up; wait`},
		scenario.Ready{Log: regexp.MustCompile("^replica"), Timeout: time.Minute}, map[string]string{"IDEMTEST_MARKER": marker})
	sc.Services["svc"].Replicas = 2
	set, err := Start(context.Background(), []*scenario.Scenario{sc}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = set
	fmt.Println("services started")
	select {}
}

// TestServicesDieWithIdemtest: when idemtest is killed with SIGKILL, with no chance to stop
// its services, none of their processes survive it: not the replicas, not their children that
// ignore SIGTERM, not the daemons that left their session.
func TestServicesDieWithIdemtest(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	marker := fmt.Sprintf("orphans-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		for _, pid := range testenv.Marked(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	held := exec.Command(os.Args[0], "-test.run=^TestHoldServices$", "-test.count=1")
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
		started = strings.Contains(lines.Text(), "services started")
	}
	if !started {
		_ = held.Process.Kill()
		_ = held.Wait()
		t.Fatal("the services never started")
	}
	// Per replica: the shell, the setsid daemon's shell and sleep, the subshell and its sleep
	// (and the shepherd): wait until each has started, since the ready line can come first.
	var before []int
	testenv.Until(time.Minute, func() bool { before = testenv.Marked(marker); return len(before) >= 2*5 })
	if len(before) < 2*5 {
		_ = held.Process.Kill()
		t.Fatalf("%d marked processes before the kill, want at least 10", len(before))
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
