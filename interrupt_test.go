package main

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterrupt sends Ctrl-C (SIGINT) to a run while a call is in flight: the services must be
// stopped, the reports written, the exit code 130, and the scenario cut short must be
// "interrupted" in the terminal, JSON and JUnit reports: not passed, and not a failure that
// blames the tool for the cancelled call.
func TestInterrupt(t *testing.T) {
	bin := buildRefundServer(t)
	dir := t.TempDir()
	idemtest := filepath.Join(dir, "idemtest")
	if out, err := exec.Command("go", "build", "-o", idemtest, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// The tool server holds every call until its client leaves, and says when one arrived: the
	// signal is sent while the call is in flight, without guessing how long anything takes.
	arrived := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the client leaving
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	}))
	defer slow.Close()

	pidFile := filepath.Join(dir, "svc.pid")
	scenario := `name: long
services:
  refunds:
    command: [sh, -c, "echo $$ > ` + pidFile + `; exec refundserver --addr 127.0.0.1:{{ port }}"]
    ready: {http: "http://127.0.0.1:{{ port }}/healthz", timeout: 30s}
endpoints:
  e:
    http: {url: "` + slow.URL + `/tools/{tool}"}
trials: 3
steps:
  - call_tool: issue_refund
    args: {accountId: a, amount: 1}
`
	if err := os.WriteFile(filepath.Join(dir, "long.yaml"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	later := strings.Replace(scenario, "name: long", "name: later", 1)
	if err := os.WriteFile(filepath.Join(dir, "later.yaml"), []byte(later), 0o644); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(dir, "report.xml")
	jsonFile := filepath.Join(dir, "report.json")
	c := exec.Command(idemtest, "run", "--no-color", "--junit", junit, "--json", jsonFile, "long.yaml", "later.yaml")
	c.Dir = dir
	c.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out strings.Builder
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()

	select {
	case <-arrived:
	case <-exited:
		t.Fatalf("idemtest exited before calling the tool; output:\n%s", out.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("the call never reached the tool server; output:\n%s", out.String())
	}
	// The services are ready before any scenario runs, so the pid file is there by now.
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("idemtest did not stop within 15s of SIGINT; output:\n%s", out.String())
	}
	if code := c.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit code %d, want 130; output:\n%s", code, out.String())
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("service process %d still running after the interrupt", pid)
	}

	text := out.String()
	for _, want := range []string{
		"⊘ long  interrupted in trial 1 of 3 (0 passed before)",
		"⊘ later  interrupted before it started",
		"interrupted: 0 passed, 0 failed, 2 interrupted",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("terminal report lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"✓", "✗", "FAIL", "expected outcome"} {
		if strings.Contains(text, bad) {
			t.Errorf("terminal report says %q of an interrupted run:\n%s", bad, text)
		}
	}

	var rep struct {
		Interrupted bool
		Summary     struct{ Passed, Failed, Errored, Interrupted int }
		Scenarios   []struct {
			Name, Status string
			Failure      any
		}
	}
	if b, err := os.ReadFile(jsonFile); err != nil {
		t.Errorf("no JSON report after the interrupt: %v", err)
	} else if err := json.Unmarshal(b, &rep); err != nil {
		t.Errorf("JSON report: %v", err)
	} else {
		if !rep.Interrupted || rep.Summary.Interrupted != 2 || rep.Summary.Passed+rep.Summary.Failed+rep.Summary.Errored != 0 {
			t.Errorf("JSON summary: interrupted %v, %+v", rep.Interrupted, rep.Summary)
		}
		for _, s := range rep.Scenarios {
			if s.Status != "interrupted" || s.Failure != nil {
				t.Errorf("JSON scenario %s: status %q, failure %v", s.Name, s.Status, s.Failure)
			}
		}
	}

	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Error   *struct{} `xml:"error"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if b, err := os.ReadFile(junit); err != nil {
		t.Errorf("no JUnit report after the interrupt: %v", err)
	} else if err := xml.Unmarshal(b, &doc); err != nil {
		t.Errorf("JUnit report: %v", err)
	} else {
		if doc.Tests != 2 || doc.Failures != 0 || doc.Errors != 0 || doc.Skipped != 2 {
			t.Errorf("JUnit counts: tests %d, failures %d, errors %d, skipped %d\n%s", doc.Tests, doc.Failures, doc.Errors, doc.Skipped, b)
		}
		for _, s := range doc.Suites {
			for _, tc := range s.Cases {
				if tc.Failure != nil || tc.Error != nil || tc.Skipped == nil || !strings.HasPrefix(tc.Skipped.Message, "interrupted") {
					t.Errorf("JUnit case %s is not skipped as interrupted:\n%s", tc.Name, b)
				}
			}
		}
	}
}
