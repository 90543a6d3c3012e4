package reporters

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
)

// recorded is the JSON report of a real run, as this version wrote it, decoded into types of
// its own so that the recording stays readable whatever the report's format becomes.
type recorded struct {
	Start      time.Time `json:"start"`
	DurationMS float64   `json:"duration_ms"`
	Scenarios  []struct {
		Name         string         `json:"name"`
		File         string         `json:"file"`
		Line         int            `json:"line"`
		Tags         []string       `json:"tags"`
		Status       runner.Status  `json:"status"`
		Trials       int            `json:"trials"`
		TrialsRun    int            `json:"trials_run"`
		TrialsPassed int            `json:"trials_passed"`
		TrialsFailed int            `json:"trials_failed"`
		Fanouts      int            `json:"fanouts"`
		Overlapped   int            `json:"fanouts_overlapped"`
		DurationMS   float64        `json:"duration_ms"`
		Metrics      runner.Metrics `json:"metrics"`
		Failure      *struct {
			Kind        string       `json:"kind"`
			Step        string       `json:"step"`
			Pos         scenario.Pos `json:"pos"`
			Message     string       `json:"message"`
			Expression  string       `json:"expression"`
			Explanation []string     `json:"explanation"`
		} `json:"failure"`
		FailedTrial *recordedTrial `json:"failed_trial"`
		FirstTrial  *recordedTrial `json:"first_trial"`
	} `json:"scenarios"`
}

type recordedTrial struct {
	Index   int    `json:"index"`
	Session string `json:"session"`
	Passed  bool   `json:"passed"`
	Calls   []struct {
		Step     string           `json:"step"`
		Tool     string           `json:"tool"`
		Endpoint string           `json:"endpoint"`
		Copy     int              `json:"copy"`
		Attempt  int              `json:"attempt"`
		Key      string           `json:"key"`
		Outcome  scenario.Outcome `json:"outcome"`
		Status   int              `json:"status"`
		Replayed bool             `json:"replayed"`
		Conflict bool             `json:"conflict"`
		Lost     bool             `json:"lost"`
		Error    string           `json:"error"`
		Start    time.Time        `json:"start"`
		Duration time.Duration    `json:"duration_ns"`
		Sent     time.Time        `json:"sent"`
		Answered time.Time        `json:"answered"`
	} `json:"calls"`
}

func (t *recordedTrial) trial() *runner.Trial {
	if t == nil {
		return nil
	}
	out := &runner.Trial{Index: t.Index, Session: t.Session, Passed: t.Passed}
	for _, c := range t.Calls {
		out.Calls = append(out.Calls, runner.Call{Step: c.Step, Tool: c.Tool, Endpoint: c.Endpoint, Copy: c.Copy, Attempt: c.Attempt,
			Key: c.Key, Outcome: c.Outcome, Status: c.Status, Replayed: c.Replayed, Conflict: c.Conflict, Lost: c.Lost, Error: c.Error,
			Start: c.Start, Duration: c.Duration, Sent: c.Sent, Answered: c.Answered})
	}
	return out
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// recordedReport reads a report recorded from a real run (go run . run --json - …).
func recordedReport(t *testing.T, name string) *runner.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var rec recorded
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	rep := &runner.Report{Start: rec.Start, Duration: msDuration(rec.DurationMS)}
	for _, s := range rec.Scenarios {
		r := &runner.ScenarioResult{
			Scenario: &scenario.Scenario{Name: s.Name, File: s.File, Pos: scenario.Pos{File: s.File, Line: s.Line, Col: 1}, Tags: s.Tags},
			Status:   s.Status, Trials: s.Trials, TrialsRun: s.TrialsRun, TrialsPassed: s.TrialsPassed, TrialsFailed: s.TrialsFailed,
			Fanouts: s.Fanouts, Overlapped: s.Overlapped, Duration: msDuration(s.DurationMS), Metrics: s.Metrics,
			FailedTrial: s.FailedTrial.trial(), Trial1: s.FirstTrial.trial(),
		}
		if f := s.Failure; f != nil {
			r.Failure = &runner.Failure{Kind: runner.FailureKind(f.Kind), Step: f.Step, Pos: f.Pos, Message: f.Message, Expression: f.Expression, Explanation: f.Explanation}
		}
		rep.Scenarios = append(rep.Scenarios, r)
	}
	return rep
}

// TestHTMLGoldenRecorded renders the report of a real run against the reference server's
// "none" mode (--trials 1 --session 0123456789ab, four scenarios of examples/scenarios).
func TestHTMLGoldenRecorded(t *testing.T) {
	rep := recordedReport(t, "run.none.json")
	var buf bytes.Buffer
	if err := WriteHTML(&buf, rep, "v0.0.0-test"); err != nil {
		t.Fatal(err)
	}
	golden(t, "run.none.html", buf.Bytes())
	page := buf.String()
	if n := strings.Count(page, `class="group waterfall"`); n != 2 {
		t.Errorf("%d waterfalls, want 2 (the 16-way bursts of verdict_only and burst)", n)
	}
	if !strings.Contains(page, `<span class="badge dup executed">key executed 16 times</span>`) {
		t.Error("the burst's waterfall does not say its key executed 16 times")
	}
	if !strings.Contains(page, `<h4>first (lost)</h4>`) {
		t.Error("the lost answer and its retry are not side by side")
	}
	// Every bar lies on its axis: no negative offset or width, none past the end.
	for _, attr := range []string{`left: -`, `width: -`} {
		if strings.Contains(page, attr) {
			t.Errorf("a bar with %q", attr)
		}
	}
}

func TestHTMLRunLevel(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  *runner.Report
		want string
	}{
		{"a service that did not start", &runner.Report{Start: t0, Err: errors.New("service refunds was not ready within 1s: <exit 1>")},
			`<div class="banner error" id="run-error">error: service refunds was not ready within 1s: &lt;exit 1&gt;</div>`},
		{"interrupted while loading", &runner.Report{Start: t0, Interrupted: true}, `<div class="banner interrupted" id="interrupted">`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteHTML(&buf, tc.rep, "v0.0.0-test"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), tc.want) {
				t.Errorf("the page lacks %s", tc.want)
			}
		})
	}
}
