package reporters

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/verdict"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// sampleReport has a pass, a failed assertion with hostile bytes from the endpoint, an errored
// scenario, a key the verdict found executed twice and a skipped one. It is built by hand only
// for what a recorded run cannot hold here (a NUL and invalid UTF-8 from a server, which no
// scenario file can make a sink send); every other golden is rendered from a real run
// (recorded_test.go).
func sampleReport() *runner.Report {
	call := func(step string, cp int, key string, o scenario.Outcome, status int, replayed bool, errMsg string) runner.Call {
		return runner.Call{Step: step, Tool: "issue_refund", Endpoint: "refunds", Copy: cp, Attempt: 1, Key: key, Outcome: o,
			Status: status, Replayed: replayed, Conflict: status == 409, Error: errMsg, Start: t0, Duration: 1500 * time.Microsecond}
	}
	pass := &runner.ScenarioResult{
		Scenario: &scenario.Scenario{Name: "sequential retry", File: "scenarios/retry.yaml", Pos: scenario.Pos{File: "scenarios/retry.yaml", Line: 1, Col: 1}, Tags: []string{"retry"}},
		Status:   runner.Passed, Trials: 1, TrialsRun: 1, TrialsPassed: 1, Start: t0, Duration: 12 * time.Millisecond,
		Trial1: &runner.Trial{Index: 1, Session: "aaaaaaaaaaaa", Passed: true, Calls: []runner.Call{
			call("first", 0, "aaaaaaaaaaaa-0", scenario.OK, 200, false, ""),
			call("retry", 0, "aaaaaaaaaaaa-0", scenario.OK, 200, true, ""),
		}},
		Metrics: runner.Metrics{Calls: 2, OK: 2, Replayed: 1, Keyed: 2, Retries: 1},
	}
	failedTrial := &runner.Trial{Index: 3, Session: "bbbbbbbbbbbb", Calls: []runner.Call{
		call("burst", 1, "bbbbbbbbbbbb-0", scenario.OK, 200, false, ""),
		call("burst", 2, "bbbbbbbbbbbb-0", scenario.OK, 200, false, ""),
		call("burst", 3, "bbbbbbbbbbbb-0", scenario.Info, 502, false, "server error 502: \x00\x1b[31mbad\xff gateway <&>"),
	}}
	failure := &runner.Failure{Kind: "assert", Step: "step2", Pos: scenario.Pos{File: "scenarios/burst.yaml", Line: 9, Col: 13},
		Message: "assertion is false", Expression: `len(uniq(map(filter(burst.calls, .ok), .result.refundId))) == 1`,
		Explanation: []string{`len(uniq(map(filter(burst.calls, .ok), .result.refundId))) = 2, want == 1`}}
	fail := &runner.ScenarioResult{
		Scenario: &scenario.Scenario{Name: "burst executes once", File: "scenarios/burst.yaml", Pos: scenario.Pos{File: "scenarios/burst.yaml", Line: 1, Col: 1}},
		Status:   runner.Failed, Trials: 5, TrialsRun: 5, TrialsPassed: 2, TrialsFailed: 3, Fanouts: 5, Overlapped: 3,
		Start: t0, Duration: 40 * time.Millisecond,
		Failure: failure, FailedTrial: failedTrial, Trial1: &runner.Trial{Index: 1, Session: "cccccccccccc", Passed: true},
		Metrics: runner.Metrics{Calls: 9, OK: 8, Info: 1, Keyed: 9, Retries: 6, Conflicts: 2, SpreadMaxUS: 41.5, DuplicateExecutions: 1},
	}
	errored := &runner.ScenarioResult{
		Scenario: &scenario.Scenario{Name: "service died", File: "scenarios/retry.yaml", Pos: scenario.Pos{File: "scenarios/retry.yaml", Line: 1, Col: 1}},
		Status:   runner.Errored, Trials: 1, TrialsRun: 1, Start: t0, Duration: 3 * time.Millisecond,
		Failure: &runner.Failure{Kind: "error", Step: "first", Pos: scenario.Pos{File: "scenarios/retry.yaml", Line: 4, Col: 9},
			Message: "service refunds stopped unexpectedly (exit status 1); its last output:\n    panic: boom"},
		FailedTrial: &runner.Trial{Index: 1, Session: "dddddddddddd"},
	}
	// The verdict's own failure, explained as the runner explains it.
	judged := verdict.Judge([]verdict.Call{
		{Key: "eeeeeeeeeeee-0", Tool: "issue_refund", Step: "first", Attempt: 1, OK: true, Lost: true, Answer: map[string]any{"refundId": "re_1", "amount": 49.99}},
		{Key: "eeeeeeeeeeee-0", Tool: "issue_refund", Step: "retry", Attempt: 1, OK: true, Answer: map[string]any{"refundId": "re_2", "amount": 49.99}},
	})
	v := judged.Violations[0]
	verdictFailed := &runner.ScenarioResult{
		Scenario: &scenario.Scenario{Name: "verdict only", File: "scenarios/verdict.yaml", Pos: scenario.Pos{File: "scenarios/verdict.yaml", Line: 1, Col: 1}},
		Status:   runner.Failed, Trials: 1, TrialsRun: 1, TrialsFailed: 1, Start: t0, Duration: 5 * time.Millisecond,
		Failure: &runner.Failure{Kind: "verdict", Step: "first", Pos: scenario.Pos{File: "scenarios/verdict.yaml", Line: 4, Col: 9},
			Message: v.Message(), Explanation: v.Explain()},
		FailedTrial: &runner.Trial{Index: 1, Session: "eeeeeeeeeeee", Calls: []runner.Call{
			{Step: "first", Tool: "issue_refund", Endpoint: "refunds", Attempt: 1, Key: "eeeeeeeeeeee-0", Outcome: scenario.Info, Status: 200, Lost: true,
				Error: "response discarded (lose_response); the server answered 200", Start: t0, Duration: 1500 * time.Microsecond},
			call("retry", 0, "eeeeeeeeeeee-0", scenario.OK, 200, false, ""),
		}},
		Metrics: runner.Metrics{Calls: 2, OK: 1, Info: 1, Keyed: 2, Retries: 1, DuplicateExecutions: judged.Duplicates},
	}
	skipped := &runner.ScenarioResult{
		Scenario: &scenario.Scenario{Name: "not reached", File: "scenarios/z.yaml", Pos: scenario.Pos{File: "scenarios/z.yaml", Line: 1, Col: 1}},
		Status:   runner.Skipped, Trials: 1,
	}
	return &runner.Report{Scenarios: []*runner.ScenarioResult{pass, fail, errored, verdictFailed, skipped}, Start: t0, Duration: 100 * time.Millisecond}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/reporters/... -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./internal/reporters/... -update to accept):\n%s", name, got)
	}
}

func TestJUnitGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, sampleReport()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.junit.xml", buf.Bytes())
	var doc JUnitTestSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("the report is not valid XML: %v", err)
	}
	if doc.Tests != 5 || doc.Failures != 2 || doc.Errors != 1 || skippedOf(doc) != 1 || len(doc.Suites) != 4 {
		t.Errorf("counts: %+v", doc)
	}
}

func TestJSONGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, sampleReport(), "v0.0.0-test"); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", buf.Bytes())
	var back JSONReport
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Summary.Failed != 2 || back.Scenarios[1].FailedTrial != 3 || back.Scenarios[1].History[1].Calls[2].Key != "bbbbbbbbbbbb-0" {
		t.Errorf("round trip: %+v", back.Summary)
	}
}

func TestTerminalGolden(t *testing.T) {
	var buf bytes.Buffer
	Terminal(&buf, sampleReport(), TerminalOptions{})
	golden(t, "report.txt", buf.Bytes())
	if strings.Contains(buf.String(), "\x1b[") {
		t.Error("colour codes without colour")
	}
	buf.Reset()
	Terminal(&buf, sampleReport(), TerminalOptions{Color: true})
	if !strings.Contains(buf.String(), "\x1b[") {
		t.Error("no colour codes with colour on")
	}
}

func TestGitHubAnnotations(t *testing.T) {
	var buf bytes.Buffer
	GitHub(&buf, sampleReport(), "")
	golden(t, "report.github.txt", buf.Bytes())
}

func TestRunLevelError(t *testing.T) {
	rep := &runner.Report{Start: t0, Err: errors.New("service refunds was not ready within 1s")}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `errors="1"`) || !strings.Contains(buf.String(), "not ready within 1s") {
		t.Errorf("run-level error missing from JUnit:\n%s", buf.String())
	}
}

func TestProgressLiveLine(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, 2, true, false, false)
	sc := &scenario.Scenario{Name: "burst"}
	p.Event(runner.Event{Kind: "scenario-start", Scenario: sc})
	if !strings.Contains(buf.String(), "0/2 done · running burst") {
		t.Errorf("live line %q", buf.String())
	}
	p.Event(runner.Event{Kind: "scenario-end", Scenario: sc, Result: &runner.ScenarioResult{Scenario: sc, Status: runner.Passed}})
	if !strings.Contains(buf.String(), "\r\x1b[K1/2 done") {
		t.Errorf("the line is not redrawn in place: %q", buf.String())
	}
	p.Finish()
	if !strings.HasSuffix(buf.String(), "\r\x1b[K") {
		t.Errorf("Finish left the line: %q", buf.String())
	}
	// Not a terminal: nothing is drawn.
	buf.Reset()
	q := NewProgress(&buf, 2, false, false, false)
	q.Event(runner.Event{Kind: "scenario-start", Scenario: sc})
	q.Finish()
	if buf.Len() != 0 {
		t.Errorf("progress written to a non-terminal: %q", buf.String())
	}
}

// TestInterrupted: a scenario the interrupt stopped is neither passed nor failed in any report,
// and JUnit counts it as skipped (the recorded run.interrupted.json: one scenario finished, one
// cut short in its second trial with its call in flight, one never started).
func TestInterrupted(t *testing.T) {
	rep := recordedReport(t, "run.interrupted.json")
	var xmlOut, js, gh bytes.Buffer
	if err := WriteJUnit(&xmlOut, rep); err != nil {
		t.Fatal(err)
	}
	var doc JUnitTestSuites
	if err := xml.Unmarshal(xmlOut.Bytes(), &doc); err != nil {
		t.Fatalf("the report is not valid XML: %v", err)
	}
	if doc.Tests != 3 || doc.Failures != 0 || doc.Errors != 0 || skippedOf(doc) != 2 {
		t.Errorf("junit counts: %+v", doc)
	}
	if err := WriteJSON(&js, rep, "dev"); err != nil {
		t.Fatal(err)
	}
	var back JSONReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !back.Interrupted || back.Summary.Passed != 1 || back.Summary.Failed != 0 || back.Summary.Interrupted != 2 ||
		back.Scenarios[1].Status != runner.Interrupted || len(back.Scenarios[1].History) != 2 || !back.Scenarios[1].History[1].Cut {
		t.Errorf("json: %+v", back.Summary)
	}
	var txt bytes.Buffer
	Terminal(&txt, rep, TerminalOptions{})
	if !strings.Contains(txt.String(), "⊘ cut short in its second trial  interrupted in trial 2 of 3 (1 passed before)") {
		t.Errorf("terminal:\n%s", txt.String())
	}
	GitHub(&gh, rep, "")
	if gh.Len() != 0 {
		t.Errorf("an interrupted scenario is annotated as an error: %s", gh.String())
	}
}

func TestHTMLGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, sampleReport(), "v0.0.0-test"); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.html", buf.Bytes())
	page := buf.String()
	for _, want := range []string{
		`id="duplicate-executions">2<`,              // the summary counts the verdict's duplicates
		`class="group waterfall"`,                   // the burst's copies as a waterfall
		`<ol class="sequence group">`,               // sequential calls as a sequence
		`<span class="badge lost">lost answer`,      // the discarded answer marked
		`<span class="badge replay">replay`,         // and the replay
		`<div class="answers"><div class="answer">`, // the verdict's answers side by side
		`&lt;&amp;&gt;`,                             // the server's bytes escaped
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(page, "<&>") || strings.Contains(page, "\x1b") {
		t.Error("the server's bytes reached the page unescaped")
	}
	// Self-contained: nothing is fetched at view time.
	for _, ref := range []string{"http://", "https://", "src=", "@import"} {
		if strings.Contains(page, ref) {
			t.Errorf("the page refers to %q", ref)
		}
	}
}

func TestVerdictAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lines  []string
		labels string
		differ string
	}{
		{"verdict failure", []string{
			"2 answers to one key that are not replays of each other, each an execution:",
			`  first (lost)  {"refundId":"re_1"}`,
			`  retry         {"refundId":"re_2"}`,
			"  they differ at: refundId",
			"  (if these are not executions: …)",
		}, "first (lost)|retry", "refundId"},
		{"nested under a failed assertion", []string{
			"len(x) = 16, want == 1",
			"the exactly-once verdict also failed:",
			"a.yaml:6:9: step burst: key k executed 16 times (issue_refund)",
			"  16 answers to one key that are not replays of each other, each an execution:",
			`    burst copy 1  {"refundId":"re_1"}`,
			`    burst copy 2  {"refundId":"re_2"}`,
			"    … and 14 more",
			"    they differ at: refundId",
		}, "burst copy 1|burst copy 2|… and 14 more", "refundId"},
		{"no verdict", []string{"len(x) = 2, want == 1", "  a  b"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answers, differ := verdictAnswers(tc.lines)
			var labels []string
			for _, a := range answers {
				labels = append(labels, a.Label)
			}
			if strings.Join(labels, "|") != tc.labels || differ != tc.differ {
				t.Errorf("got %q, %q; want %q, %q", labels, differ, tc.labels, tc.differ)
			}
		})
	}
}

func TestStepSummary(t *testing.T) {
	rep := sampleReport()
	// A server's answer that tries to end the code fence and inject a table row.
	rep.Scenarios[2].Failure.Message += "\n```\n| injected | <script>x</script>"
	var buf bytes.Buffer
	if err := StepSummary(&buf, rep); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.summary.md", buf.Bytes())
	md := buf.String()
	for _, want := range []string{
		"### ❌ idemtest: 3 of 5 scenarios failed",
		"| 1 | 3 | 2 | 0 | 12% (1/8) |", // totals: passed, failed, duplicates, replays differ, replay rate
		"| burst executes once | failed | 2/5 passed | **1 duplicate execution** |",
		"| verdict only | failed | 0/1 passed | **1 duplicate execution** |",
		"&lt;script&gt;", // escaped in the summary line
		"````text\n",     // a fence longer than the server's
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
	// The server's bytes stay inside the fence, where GitHub shows them as text.
	_, fenced, _ := strings.Cut(md, "````text\n")
	fenced, _, _ = strings.Cut(fenced, "\n````\n")
	if strings.Count(md, "<script>") != strings.Count(fenced, "<script>") {
		t.Error("the server's HTML reached the summary outside a code fence")
	}
}

func TestWorkspacePath(t *testing.T) {
	wd, _ := os.Getwd()
	for _, tc := range []struct{ name, file, workspace, want string }{
		{"no workspace", "scenarios/a.yaml", "", "scenarios/a.yaml"},
		{"run from the workspace", "scenarios/a.yaml", wd, "scenarios/a.yaml"},
		{"run from a subdirectory", "scenarios/a.yaml", filepath.Dir(filepath.Dir(wd)), "internal/reporters/scenarios/a.yaml"},
		{"an absolute path inside", filepath.Join(wd, "x", "a.yaml"), wd, "x/a.yaml"},
		{"a path outside the workspace", "/elsewhere/a.yaml", wd, "/elsewhere/a.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WorkspacePath(tc.file, tc.workspace); got != tc.want {
				t.Errorf("WorkspacePath(%q, %q) = %q, want %q", tc.file, tc.workspace, got, tc.want)
			}
		})
	}
}
