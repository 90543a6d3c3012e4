//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/testenv"
)

var (
	idemtestOnce sync.Once
	idemtestBin  string
	idemtestErr  error
)

// buildIdemtest builds the idemtest binary once, for tests that signal it.
func buildIdemtest(t *testing.T) string {
	t.Helper()
	idemtestOnce.Do(func() {
		dir, err := os.MkdirTemp("", "idemtest-cli")
		if err != nil {
			idemtestErr = err
			return
		}
		idemtestBin = filepath.Join(dir, "idemtest")
		if out, err := exec.Command("go", "build", "-o", idemtestBin, ".").CombinedOutput(); err != nil {
			idemtestErr = err
			idemtestBin = string(out)
		}
	})
	if idemtestErr != nil {
		t.Fatalf("build idemtest: %v\n%s", idemtestErr, idemtestBin)
	}
	return idemtestBin
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// cliRun is idemtest running in the background.
type cliRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

// startIdemtest runs idemtest in dir, with the reference server on PATH.
func startIdemtest(t *testing.T, dir string, args ...string) *cliRun {
	t.Helper()
	bin := buildRefundServer(t)
	c := exec.Command(buildIdemtest(t), args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	r := &cliRun{t: t, cmd: c, out: &lockedBuffer{}, done: make(chan struct{})}
	c.Stdout, c.Stderr = r.out, r.out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = c.Process.Kill()
			<-r.done
		}
	})
	return r
}

func (r *cliRun) signal(sig os.Signal) {
	r.t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("send %v: %v", sig, err)
	}
}

// exitCode waits for idemtest to exit. The limit only keeps a hung run from hanging the test
// suite: a run that ignores its signals fails here.
func (r *cliRun) exitCode(limit time.Duration) int {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(limit):
		r.t.Fatalf("idemtest still running %s after the signal; output:\n%s", limit, r.out.String())
	}
	return r.cmd.ProcessState.ExitCode()
}

// waitFor polls until cond holds or idemtest exits; it fails the test on the limit.
func (r *cliRun) waitFor(what string, cond func() bool) {
	r.t.Helper()
	held := testenv.Until(time.Minute, func() bool {
		if cond() {
			return true
		}
		select {
		case <-r.done:
			r.t.Fatalf("idemtest exited (%v) before %s; output:\n%s", r.cmd.ProcessState, what, r.out.String())
		default:
		}
		return false
	})
	if !held {
		r.t.Fatalf("gave up waiting for %s; output:\n%s", what, r.out.String())
	}
}

// cpuTicks is the CPU time pid has used, in clock ticks.
func cpuTicks(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b)[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}

// busy waits until idemtest has burnt n more clock ticks of CPU from now: it is then inside
// the heavy work the test set up (a large file to decode, a heavy assertion).
func (r *cliRun) busy(n int) {
	r.t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		r.t.Skip("needs /proc")
	}
	start := cpuTicks(r.cmd.Process.Pid)
	r.waitFor("idemtest to be busy", func() bool { return cpuTicks(r.cmd.Process.Pid) >= start+n })
}

// readPid waits for a pid file written by a process of the scenario.
func (r *cliRun) readPid(path string) int {
	r.t.Helper()
	var pid int
	r.waitFor(path, func() bool {
		b, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return pid > 0
	})
	return pid
}

// alive reports whether pid still exists (a zombie left unreaped counts: it is still in ps).
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// checkJUnit checks that the JUnit report exists and is XML.
func checkJUnit(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("no JUnit report: %v", err)
		return
	}
	var v struct {
		XMLName xml.Name `xml:"testsuites"`
	}
	if err := xml.Unmarshal(b, &v); err != nil {
		t.Errorf("JUnit report is not XML: %v\n%s", err, b)
	}
}

// TestInterrupt sends Ctrl-C (SIGINT) to a run while a call is in flight: the services must be
// stopped, the reports written, the exit code 130, and the scenario cut short must be
// "interrupted" in the terminal, JSON and JUnit reports: not passed, and not a failure that
// blames the tool for the cancelled call. The scenario queued behind it is interrupted too.
func TestInterrupt(t *testing.T) {
	// The tool server holds every call until its client leaves, and says when one arrived: the
	// signal is sent while the call is in flight, without guessing how long anything takes.
	var arrived atomic.Bool
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the client leaving
		arrived.Store(true)
		<-r.Context().Done()
	}))
	defer slow.Close()

	dir := t.TempDir()
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
	writeTestFile(t, filepath.Join(dir, "long.yaml"), scenario)
	writeTestFile(t, filepath.Join(dir, "later.yaml"), strings.Replace(scenario, "name: long", "name: later", 1))
	junit := filepath.Join(dir, "report.xml")
	jsonFile := filepath.Join(dir, "report.json")
	r := startIdemtest(t, dir, "run", "--no-color", "--junit", junit, "--json", jsonFile, "long.yaml", "later.yaml")
	pid := r.readPid(pidFile)
	r.waitFor("the call to reach the tool server", arrived.Load)
	r.signal(syscall.SIGINT)
	if code := r.exitCode(15 * time.Second); code != 130 {
		t.Errorf("exit code %d, want 130; output:\n%s", code, r.out.String())
	}
	if alive(pid) {
		t.Errorf("service process %d still running after the interrupt", pid)
	}
	checkJUnit(t, junit)

	text := r.out.String()
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
		Suites   []struct {
			Skipped int `xml:"skipped,attr"`
			Cases   []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Error   *struct{} `xml:"error"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if b, err := os.ReadFile(junit); err == nil {
		if err := xml.Unmarshal(b, &doc); err != nil {
			t.Errorf("JUnit report: %v", err)
		}
		skipped := 0 // the schema Jenkins checks has the skipped count on each suite only
		for _, s := range doc.Suites {
			skipped += s.Skipped
		}
		if doc.Tests != 2 || doc.Failures != 0 || doc.Errors != 0 || skipped != 2 {
			t.Errorf("JUnit counts: tests %d, failures %d, errors %d, skipped %d\n%s", doc.Tests, doc.Failures, doc.Errors, skipped, b)
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

// TestLoadRefusesSpecialFiles: a named pipe or a symlink to /dev/zero in a scenario directory
// is refused with an error that names it, before anything is read from it (it used to hang, or
// read without end).
func TestLoadRefusesSpecialFiles(t *testing.T) {
	tests := []struct {
		name string
		make func(path string) error
		kind string
	}{
		{"named pipe", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "a named pipe"},
		{"symlink to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "a device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTestFile(t, filepath.Join(dir, "ok.yaml"), "name: ok\nsteps:\n  - sleep: 1ms\n")
			if err := tt.make(filepath.Join(dir, "special.yaml")); err != nil {
				t.Skipf("cannot make a %s here: %v", tt.name, err)
			}
			r := startIdemtest(t, dir, "run", "--no-color", ".")
			if code := r.exitCode(30 * time.Second); code != 2 {
				t.Errorf("exit code %d, want 2; output:\n%s", code, r.out.String())
			}
			if want := "special.yaml: not a regular file (" + tt.kind + ")"; !strings.Contains(r.out.String(), want) {
				t.Errorf("output does not say %q:\n%s", want, r.out.String())
			}
		})
	}
}

// TestInterruptWhileLoading sends SIGINT while idemtest decodes a large scenario in a
// directory that also holds a named pipe: it stops there, starts no service, exits 130 and
// writes a report that says it was interrupted.
func TestInterruptWhileLoading(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "a_pipe.yaml"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	marker := filepath.Join(dir, "started")
	var b strings.Builder
	b.WriteString("name: big\nservices:\n  svc:\n    command: [sh, -c, \"touch " + marker + "; exec sleep 1000\"]\nsteps:\n")
	for b.Len() < 7<<20 {
		b.WriteString("  - sleep: 1ms\n")
	}
	writeTestFile(t, filepath.Join(dir, "big.yaml"), b.String())
	junit := filepath.Join(dir, "report.xml")
	r := startIdemtest(t, dir, "run", "--no-color", "--junit", junit, ".")
	r.busy(30)
	r.signal(syscall.SIGINT)
	if code := r.exitCode(30 * time.Second); code != 130 {
		t.Errorf("exit code %d, want 130; output:\n%s", code, r.out.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a service was started after the interrupt")
	}
	checkJUnit(t, junit)
}

// heavyServer answers every call with a list of 100,000 numbers.
func heavyServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	list := make([]int, 100000)
	for i := range list {
		list[i] = i
	}
	body, _ := json.Marshal(list)
	var calls atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
		calls.Add(1)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), &calls
}

// startHeavy runs a scenario that starts a service (svcCommand) and a stdio MCP server that
// each leave a descendant in a session of its own (setsid), calls both, then evaluates an
// assertion that runs for hours. It returns once idemtest is busy in that assertion, with the
// JUnit report's path and the pids of the service and of both escaped descendants.
func startHeavy(t *testing.T, svcCommand string) (*cliRun, string, []int) {
	t.Helper()
	url, calls := heavyServer(t)
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "heavy.yaml"), `name: heavy
services:
  svc:
    command: [sh, -c, "`+svcCommand+`"]
endpoints:
  e:
    http: {url: "`+url+`/tools/{tool}"}
  m:
    mcp: {command: [sh, -c, "setsid sleep 1000 & echo $! > mcp-orphan.pid; exec refundserver --stdio"]}
steps:
  - call_tool: issue_refund
    endpoint: m
    args: {accountId: a, amount: 1}
  - id: a
    call_tool: list
    endpoint: e
  - assert: 'sum(a.result, sum(a.result, #)) > 0'
`)
	junit := filepath.Join(dir, "report.xml")
	r := startIdemtest(t, dir, "run", "--no-color", "--junit", junit, "heavy.yaml")
	var pids []int
	for _, f := range []string{"svc.pid", "svc-orphan.pid", "mcp-orphan.pid"} {
		pids = append(pids, r.readPid(filepath.Join(dir, f)))
	}
	r.waitFor("the list call", func() bool { return calls.Load() > 0 })
	r.busy(50)
	return r, junit, pids
}

// checkGone checks that none of pids is left once idemtest has exited.
func checkGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d that idemtest started is still there after it exited", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

const escapingService = `echo $$ > svc.pid; setsid sleep 1000 & echo $! > svc-orphan.pid; exec sleep 1000`

// TestSignalsDuringHeavyAssertion: SIGINT, SIGTERM and SIGHUP each stop a run stuck in a heavy
// assertion: exit 128 + the signal, a JUnit report, and no process idemtest started left
// running, not even those that left their process group.
func TestSignalsDuringHeavyAssertion(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: long: a heavy assertion, busy on purpose, stopped by each of three signals")
	}
	tests := []struct {
		sig  syscall.Signal
		code int
	}{
		{syscall.SIGINT, 130},
		{syscall.SIGTERM, 143},
		{syscall.SIGHUP, 129},
	}
	for _, tt := range tests {
		t.Run(tt.sig.String(), func(t *testing.T) {
			r, junit, pids := startHeavy(t, escapingService)
			r.signal(tt.sig)
			if code := r.exitCode(30 * time.Second); code != tt.code {
				t.Errorf("exit code %d, want %d; output:\n%s", code, tt.code, r.out.String())
			}
			checkJUnit(t, junit)
			checkGone(t, pids)
		})
	}
}

// TestSecondInterrupt: the first Ctrl-C waits for a service that ignores SIGTERM; the second
// kills it, and everything else, at once.
func TestSecondInterrupt(t *testing.T) {
	r, junit, pids := startHeavy(t, `trap '' TERM; echo $$ > svc.pid; setsid sleep 1000 & echo $! > svc-orphan.pid; while :; do sleep 1; done`)
	r.signal(syscall.SIGINT)
	r.waitFor("the first interrupt to be taken", func() bool { return strings.Contains(r.out.String(), "send it again to stop at once") })
	r.signal(syscall.SIGINT)
	if code := r.exitCode(30 * time.Second); code != 130 {
		t.Errorf("exit code %d, want 130; output:\n%s", code, r.out.String())
	}
	if !strings.Contains(r.out.String(), "killing every process") {
		t.Errorf("the second interrupt was not taken:\n%s", r.out.String())
	}
	// The second signal does not wait for the run: idemtest exits a second after it whether or
	// not the run has unwound and written its reports (the README promises reports for the
	// first signal only). On an idle machine the run unwinds in time; on a busy one it may not,
	// and the report file, opened before the run, stays empty. So the report is checked when
	// it was written. Either way every process is gone.
	if fi, err := os.Stat(junit); err == nil && fi.Size() == 0 {
		t.Log("the JUnit report is empty: idemtest exited before the run unwound")
	} else {
		checkJUnit(t, junit)
	}
	checkGone(t, pids)
}

func writeTestFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInterruptWhileFetchingSpec: a command reading an OpenAPI document from a server that
// never answers stops at the first SIGINT, with 130 and nothing else to say, whichever command
// it is (tools, check, init, sweep all resolve their endpoint the same way).
func TestInterruptWhileFetchingSpec(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	hold := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { close(hold); srv.Close() })
	spec := "http://" + ln.Addr().String() + "/openapi.json"
	for _, args := range [][]string{
		{"tools", "--openapi", spec},
		{"check", "--no-color", "--openapi", spec, "--http-url", "http://127.0.0.1:1/{tool}"},
		{"init", "--openapi", spec, "--dir", "gate"},
	} {
		t.Run(args[0], func(t *testing.T) {
			before := asked.Load()
			r := startIdemtest(t, t.TempDir(), args...)
			r.waitFor("the document to be asked for", func() bool { return asked.Load() > before })
			r.signal(syscall.SIGINT)
			if code := r.exitCode(30 * time.Second); code != 130 {
				t.Errorf("exit code %d, want 130; output:\n%s", code, r.out.String())
			}
			if strings.Contains(r.out.String(), "context canceled") {
				t.Errorf("the interrupt is reported as an error:\n%s", r.out.String())
			}
		})
	}
}

// TestInterruptMerge sends Ctrl-C (SIGINT) to report merge while it reads and checks many large
// shards: it stops between inputs, exits 130 and writes no merged report, not a partial one.
// The shards are run reports (the real JSON writer) of 60 shards of one split, each listing
// 20,000 uncovered tools, so that merge is still reading when the signal comes.
func TestInterruptMerge(t *testing.T) {
	dir := t.TempDir()
	const shards, tools = 60, 20000
	var paths []string
	for k := 1; k <= shards; k++ {
		sc := &scenario.Scenario{Name: fmt.Sprintf("scenario %d", k), File: "s.yaml", Pos: scenario.Pos{File: "s.yaml", Line: 1, Col: 1}, Trials: 1}
		cov := result.Coverage{Endpoint: "e", Mutating: tools}
		for i := range tools {
			cov.Uncovered = append(cov.Uncovered, result.Uncovered{Tool: fmt.Sprintf("tool_%05d", i)})
		}
		rep := &result.Report{
			Start:     time.Unix(0, 0).UTC(),
			Scenarios: []*result.ScenarioResult{{Scenario: sc, Status: result.Passed, Trials: 1, TrialsRun: 1, TrialsPassed: 1, Start: time.Unix(0, 0).UTC()}},
			Coverage:  []result.Coverage{cov},
			Shard:     result.Shard{Index: k, Total: shards},
		}
		var buf bytes.Buffer
		if err := jsonreport.Write(&buf, rep, "test"); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("shard-%02d.json", k))
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	merged, junitOut := filepath.Join(dir, "merged.json"), filepath.Join(dir, "merged.xml")
	r := startIdemtest(t, dir, append([]string{"report", "merge", "--json", merged, "--junit", junitOut}, paths...)...)
	// Merging has started once idemtest has burnt some CPU (its signal handler is installed
	// before any input is read).
	r.busy(10)
	r.signal(syscall.SIGINT)
	sent := time.Now()
	code := r.exitCode(2 * time.Minute)
	t.Logf("exit %d, %s after the signal (for BENCHMARKS-style notes; not asserted)", code, time.Since(sent).Round(time.Millisecond))
	if code != 130 {
		t.Fatalf("exit %d, want 130 (merge must stop at Ctrl-C; a merge that finished first needs larger shards); output:\n%s", code, r.out.String())
	}
	for _, p := range []string{merged, junitOut} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want no file after an interrupted merge", p, err)
		}
	}
}
