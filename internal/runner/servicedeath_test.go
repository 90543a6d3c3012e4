//go:build unix

package runner

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/testenv"
)

// TestServiceDiesDuringTheLastStep: a service that dies while the last step runs, after the
// step's call was answered, fails the scenario naming the service, its exit status and its
// last output; the run does not pass. The endpoint kills the service and answers only once the
// service has exited (it is then a zombie or gone), so the death happens during the step
// whatever the machine's pace.
func TestServiceDiesDuringTheLastStep(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "svc.pid")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(pidFile)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			http.Error(w, "no service pid", 500)
			return
		}
		// The process idemtest waits for is the service's, or its shepherd's, which dies of
		// the service's death just after it: wait for both.
		wait := []int{pid}
		if ppid := parentOf(pid); ppid > 1 && ppid != os.Getpid() {
			wait = append(wait, ppid)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for _, p := range wait {
			gone := testenv.Until(time.Minute, func() bool {
				st, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
				return err != nil || strings.Contains(string(st), ") Z ") || r.Context().Err() != nil
			})
			if !gone || r.Context().Err() != nil {
				return
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"ok": true})
	}))
	t.Cleanup(srv.Close)
	t.Setenv("KILLER_URL", srv.URL)
	t.Setenv("PID_FILE", pidFile)
	list := load(t, `
name: a service dies during the last step
trials: 1
services:
  doomed:
    command: [sh, -c, 'echo $$ > "$PID_FILE"; echo doomed is up >&2; exec sleep 1000']
    ready: {log: "doomed is up", timeout: 60s}
endpoints:
  e:
    http: {url: "${KILLER_URL}/tools/{tool}"}
steps:
  - call_tool: list_refunds
`)
	rep := Run(context.Background(), list, Options{})
	if rep.Err != nil {
		t.Fatal(rep.Err)
	}
	r := rep.Scenarios[0]
	if r.Status == result.Passed || r.Failure == nil {
		t.Fatalf("status %s: the service's death went unreported (%+v)", r.Status, rep.Scenarios[0].Trial1)
	}
	for _, want := range []string{"service doomed stopped unexpectedly", "signal: killed", "doomed is up"} {
		if !strings.Contains(r.Failure.Message, want) {
			t.Errorf("failure %q\nwant it to contain %q", r.Failure.Message, want)
		}
	}
}

// parentOf is pid's parent, from /proc; 0 when it cannot be read.
func parentOf(pid int) int {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
