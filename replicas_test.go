//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestInterruptReplicas: Ctrl-C while a trial runs against a service with replicas stops every
// process of every replica, and what each started in its process group, before idemtest exits
// 130.
func TestInterruptReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the reference server three times (-short)")
	}
	var arrived atomic.Bool
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		arrived.Store(true)
		<-r.Context().Done()
	}))
	defer slow.Close()

	dir := t.TempDir()
	// Each replica writes its own pid and that of a child it leaves running in its group.
	writeTestFile(t, filepath.Join(dir, "replicas.yaml"), `name: replicas
services:
  refunds:
    replicas: 3
    command: [sh, -c, "sleep 1000 & echo $! > child-{{ replica }}.pid; echo $$ > svc-{{ replica }}.pid; exec refundserver --addr 127.0.0.1:{{ port }}"]
    ready: {http: "http://127.0.0.1:{{ port }}/healthz", timeout: 60s}
endpoints:
  e:
    http: {url: "`+slow.URL+`/tools/{tool}"}
steps:
  - call_tool: issue_refund
    args: {accountId: a, amount: 1}
`)
	r := startIdemtest(t, dir, "run", "--no-color", "replicas.yaml")
	var pids []int
	for i := 1; i <= 3; i++ {
		pids = append(pids, r.readPid(filepath.Join(dir, fmt.Sprintf("svc-%d.pid", i))), r.readPid(filepath.Join(dir, fmt.Sprintf("child-%d.pid", i))))
	}
	r.waitFor("the call to reach the tool server", arrived.Load)
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("process %d of a replica is not running before the interrupt; output:\n%s", pid, r.out.String())
		}
	}
	r.signal(syscall.SIGINT)
	if code := r.exitCode(30 * time.Second); code != 130 {
		t.Errorf("exit code %d, want 130; output:\n%s", code, r.out.String())
	}
	checkGone(t, pids)
}

// cmdInstances prints, from a JSON report, each scenario's status and duplicate executions and
// the instance of each call of its trials, as a consumer of the report reads them:
// "instances REPORT". Ports are printed as PORT; the number of distinct instance URLs of each
// scenario is counted.
func cmdInstances(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: instances REPORT.json")
	}
	var rep struct {
		Scenarios []struct {
			Name    string `json:"name"`
			Status  string `json:"status"`
			Metrics struct {
				Duplicates *int `json:"duplicate_executions"`
			} `json:"metrics"`
			History []struct {
				Calls []struct {
					Step     string `json:"step"`
					Copy     int    `json:"copy"`
					Attempt  int    `json:"attempt"`
					Instance *struct {
						Index *int    `json:"index"`
						URL   *string `json:"url"`
					} `json:"instance"`
				} `json:"calls"`
			} `json:"history"`
		} `json:"scenarios"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &rep))
	port := regexp.MustCompile(`:[0-9]+/`)
	var b strings.Builder
	for _, s := range rep.Scenarios {
		if s.Metrics.Duplicates == nil {
			ts.Fatalf("scenario %s: no metrics.duplicate_executions", s.Name)
		}
		fmt.Fprintf(&b, "%s: %s, %d duplicate executions\n", s.Name, s.Status, *s.Metrics.Duplicates)
		urls := map[string]bool{}
		for _, t := range s.History {
			for _, c := range t.Calls {
				fmt.Fprintf(&b, "  %s copy %d attempt %d: ", c.Step, c.Copy, c.Attempt)
				if c.Instance == nil {
					b.WriteString("no instance\n")
					continue
				}
				if c.Instance.Index == nil || c.Instance.URL == nil {
					ts.Fatalf("scenario %s: an instance without index or url", s.Name)
				}
				urls[*c.Instance.URL] = true
				fmt.Fprintf(&b, "instance %d %s\n", *c.Instance.Index, port.ReplaceAllString(*c.Instance.URL, ":PORT/"))
			}
		}
		fmt.Fprintf(&b, "  %d instance urls\n", len(urls))
	}
	_, _ = ts.Stdout().Write([]byte(b.String()))
}
