package reporterstest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/check"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/verdict"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// T0 is the fixed clock of the reports built here and of the recorded battery.
var T0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// Recording is a real run of idemtest (go run . run ARGS --json testdata/NAME, from the
// repository root), recorded with go test ./internal/reporters -run TestRecord -record and
// rendered by every reporter in its golden tests.
type Recording struct {
	Name string
	Args []string
	// Interrupt, when set, is a line of the verbose output after which the run gets SIGINT.
	Interrupt string
}

// Recordings are the recorded runs, in internal/reporters/testdata.
var Recordings = []Recording{
	// The reference server ignoring keys: lost answers and bursts executed again.
	{"run.none.json", []string{"--config", "examples/broken/none.yaml", "--trials", "1", "--session", "0123456789ab",
		"examples/scenarios/verdict_only.yaml", "examples/scenarios/burst.yaml", "examples/scenarios/two_keys.yaml", "examples/scenarios/lost_response.yaml"}, ""},
	// The correct server, two trials each: everything passes.
	{"run.correct.json", []string{"--trials", "2", "--session", "0123456789ab",
		"examples/scenarios/verdict_only.yaml", "examples/scenarios/retry_returns_stored_result.yaml", "examples/scenarios/missing_key.yaml"}, ""},
	// A rejected call (a 400 with a problem body), an MCP server that exits at once, and a
	// scenario --fail-fast skips.
	{"run.mixed.json", []string{"--fail-fast", "--trials", "1", "--session", "0123456789ab",
		"internal/reporters/testdata/record/a_rejected.yaml", "internal/reporters/testdata/record/b_skipped.yaml"}, ""},
	{"run.errored.json", []string{"--trials", "1", "--session", "0123456789ab", "internal/reporters/testdata/record/c_errors.yaml"}, ""},
	// A service that exits before it is ready.
	{"run.nostart.json", []string{"--config", "internal/reporters/testdata/record/nostart.yaml", "internal/reporters/testdata/record/b_skipped.yaml"}, ""},
	// Ctrl-C during the second trial of the second scenario (after its first call line), its call
	// in flight.
	{"run.interrupted.json", []string{"-v", "--session", "0123456789ab", "internal/reporters/testdata/record/interrupt"}, "second trial t1 "},
}

// Testdata is the path of a file in internal/reporters/testdata, where the recorded runs and
// battery are, from the tests of any package of the module (they run in their package's
// directory).
func Testdata(name string) string {
	return filepath.Join(moduleRoot(), "internal", "reporters", "testdata", name)
}

// moduleRoot is the directory of go.mod, above the package whose tests run.
func moduleRoot() string {
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil || filepath.Dir(dir) == dir {
			return dir
		}
		dir = filepath.Dir(dir)
	}
}

// ValidateJUnit checks a JUnit report against the Jenkins xUnit plugin's schema
// (internal/reporters/junit/testdata/junit-10.xsd) with xmllint. Without xmllint the test is skipped, except under
// CI=true, where it fails: CI installs it (.ci/run).
func ValidateJUnit(t *testing.T, report []byte) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("xmllint is not installed (CI=true requires it; apt-get install libxml2-utils)")
		}
		t.Skip("xmllint is not installed (apt-get install libxml2-utils): JUnit reports not validated against the xUnit schema")
	}
	xsd := filepath.Join(moduleRoot(), "internal", "reporters", "junit", "testdata", "junit-10.xsd")
	path := filepath.Join(t.TempDir(), "report.xml")
	if err := os.WriteFile(path, report, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(xmllint, "--noout", "--schema", xsd, path).CombinedOutput()
	if err != nil {
		t.Errorf("the JUnit report is not valid against the xUnit schema: %v\n%s\n%s", err, out, report)
	}
}

// Recorded reads a report recorded from a real run.
func Recorded(t *testing.T, name string) *result.Report {
	t.Helper()
	b, err := os.ReadFile(Testdata(name))
	if err != nil {
		t.Fatalf("%v (go test ./internal/reporters -run TestRecord -record)", err)
	}
	rep, err := jsonreport.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// RecordedCheck is the JSON report of a real battery (the reference server over MCP stdio, keys
// ignored), with its clock fixed.
func RecordedCheck(t *testing.T) *check.Report {
	t.Helper()
	b, err := os.ReadFile(Testdata("check.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep check.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	rep.Start, rep.Duration = T0, 1500*time.Millisecond
	for _, row := range rep.Rows {
		for _, c := range row.Cells {
			c.Duration = 20 * time.Millisecond
		}
	}
	return &rep
}

// SampleReport has a pass, a failed assertion with hostile bytes from the endpoint, an errored
// scenario, a key the verdict found executed twice and a skipped one. It is built by hand only
// for what a recorded run cannot hold here (a NUL and invalid UTF-8 from a server, which no
// scenario file can make a sink send); every other golden is rendered from a real run
// (Recordings).
func SampleReport() *result.Report {
	call := func(step string, cp int, key string, o outcome.Outcome, status int, replayed bool, errMsg string) result.Call {
		return result.Call{Step: step, Tool: "issue_refund", Endpoint: "refunds", Copy: cp, Attempt: 1, Key: key, Outcome: o,
			Status: status, Replayed: replayed, Conflict: status == 409, Error: errMsg, Start: T0, Duration: 1500 * time.Microsecond}
	}
	pass := &result.ScenarioResult{
		Scenario: &scenario.Scenario{Name: "sequential retry", File: "scenarios/retry.yaml", Pos: scenario.Pos{File: "scenarios/retry.yaml", Line: 1, Col: 1}, Tags: []string{"retry"}},
		Status:   result.Passed, Trials: 1, TrialsRun: 1, TrialsPassed: 1, Start: T0, Duration: 12 * time.Millisecond,
		Trial1: &result.Trial{Index: 1, Session: "aaaaaaaaaaaa", Passed: true, Calls: []result.Call{
			call("first", 0, "aaaaaaaaaaaa-0", outcome.OK, 200, false, ""),
			call("retry", 0, "aaaaaaaaaaaa-0", outcome.OK, 200, true, ""),
		}},
		Metrics: result.Metrics{Calls: 2, OK: 2, Replayed: 1, Keyed: 2, Retries: 1},
	}
	failedTrial := &result.Trial{Index: 3, Session: "bbbbbbbbbbbb", Calls: []result.Call{
		call("burst", 1, "bbbbbbbbbbbb-0", outcome.OK, 200, false, ""),
		call("burst", 2, "bbbbbbbbbbbb-0", outcome.OK, 200, false, ""),
		call("burst", 3, "bbbbbbbbbbbb-0", outcome.Info, 502, false, "server error 502: \x00\x1b[31mbad\xff gateway <&>"),
	}}
	failure := &result.Failure{Kind: "assert", Step: "step2", Pos: scenario.Pos{File: "scenarios/burst.yaml", Line: 9, Col: 13},
		Message: "assertion is false", Expression: `len(uniq(map(filter(burst.calls, .ok), .result.refundId))) == 1`,
		Explanation: []string{`len(uniq(map(filter(burst.calls, .ok), .result.refundId))) = 2, want == 1`}}
	fail := &result.ScenarioResult{
		Scenario: &scenario.Scenario{Name: "burst executes once", File: "scenarios/burst.yaml", Pos: scenario.Pos{File: "scenarios/burst.yaml", Line: 1, Col: 1}},
		Status:   result.Failed, Trials: 5, TrialsRun: 5, TrialsPassed: 2, TrialsFailed: 3, Fanouts: 5, Overlapped: 3,
		Start: T0, Duration: 40 * time.Millisecond,
		Failure: failure, FailedTrial: failedTrial, Trial1: &result.Trial{Index: 1, Session: "cccccccccccc", Passed: true},
		Metrics: result.Metrics{Calls: 9, OK: 8, Info: 1, Keyed: 9, Retries: 6, Conflicts: 2, SpreadMaxUS: 41.5, DuplicateExecutions: 1},
	}
	errored := &result.ScenarioResult{
		Scenario: &scenario.Scenario{Name: "service died", File: "scenarios/retry.yaml", Pos: scenario.Pos{File: "scenarios/retry.yaml", Line: 1, Col: 1}},
		Status:   result.Errored, Trials: 1, TrialsRun: 1, Start: T0, Duration: 3 * time.Millisecond,
		Failure: &result.Failure{Kind: "error", Step: "first", Pos: scenario.Pos{File: "scenarios/retry.yaml", Line: 4, Col: 9},
			Message: "service refunds stopped unexpectedly (exit status 1); its last output:\n    panic: boom"},
		FailedTrial: &result.Trial{Index: 1, Session: "dddddddddddd"},
	}
	// The verdict's own failure, explained as the runner explains it.
	judged := verdict.Judge([]verdict.Call{
		{Key: "eeeeeeeeeeee-0", Tool: "issue_refund", Step: "first", Attempt: 1, OK: true, Lost: true, Answer: map[string]any{"refundId": "re_1", "amount": 49.99}},
		{Key: "eeeeeeeeeeee-0", Tool: "issue_refund", Step: "retry", Attempt: 1, OK: true, Answer: map[string]any{"refundId": "re_2", "amount": 49.99}},
	})
	v := judged.Violations[0]
	verdictFailed := &result.ScenarioResult{
		Scenario: &scenario.Scenario{Name: "verdict only", File: "scenarios/verdict.yaml", Pos: scenario.Pos{File: "scenarios/verdict.yaml", Line: 1, Col: 1}},
		Status:   result.Failed, Trials: 1, TrialsRun: 1, TrialsFailed: 1, Start: T0, Duration: 5 * time.Millisecond,
		Failure: &result.Failure{Kind: "verdict", Step: "first", Pos: scenario.Pos{File: "scenarios/verdict.yaml", Line: 4, Col: 9},
			Message: v.Message(), Explanation: v.Explain()},
		FailedTrial: &result.Trial{Index: 1, Session: "eeeeeeeeeeee", Calls: []result.Call{
			{Step: "first", Tool: "issue_refund", Endpoint: "refunds", Attempt: 1, Key: "eeeeeeeeeeee-0", Outcome: outcome.Info, Status: 200, Lost: true,
				Error: "response discarded (lose_response); the server answered 200", Start: T0, Duration: 1500 * time.Microsecond},
			call("retry", 0, "eeeeeeeeeeee-0", outcome.OK, 200, false, ""),
		}},
		Metrics: result.Metrics{Calls: 2, OK: 1, Info: 1, Keyed: 2, Retries: 1, DuplicateExecutions: judged.Duplicates},
	}
	skipped := &result.ScenarioResult{
		Scenario: &scenario.Scenario{Name: "not reached", File: "scenarios/z.yaml", Pos: scenario.Pos{File: "scenarios/z.yaml", Line: 1, Col: 1}},
		Status:   result.Skipped, Trials: 1,
	}
	return &result.Report{Scenarios: []*result.ScenarioResult{pass, fail, errored, verdictFailed, skipped}, Start: T0, Duration: 100 * time.Millisecond}
}

// Golden compares got with the golden file testdata/NAME of the package under test, or rewrites
// it with -update.
func Golden(t *testing.T, name string, got []byte) {
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
