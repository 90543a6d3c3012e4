package reporters

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
)

// JSONReport is the machine-readable report: everything the run knows.
type JSONReport struct {
	Tool        string         `json:"tool"`
	Version     string         `json:"version"`
	Start       time.Time      `json:"start"`
	DurationMS  float64        `json:"duration_ms"`
	Interrupted bool           `json:"interrupted"`
	Error       string         `json:"error,omitempty"`
	Summary     JSONSummary    `json:"summary"`
	Scenarios   []JSONScenario `json:"scenarios"`
}

// JSONSummary counts scenarios by status and sums the metrics.
type JSONSummary struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Errored int `json:"errored"`
	Skipped int `json:"skipped"`
	// Interrupted counts the scenarios the interrupt stopped before they finished.
	Interrupted int            `json:"interrupted"`
	Metrics     runner.Metrics `json:"metrics"`
}

// JSONScenario is one scenario's result.
type JSONScenario struct {
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
	Spread       *JSONSpread    `json:"spread_us,omitempty"`
	Failure      *JSONFailure   `json:"failure,omitempty"`
	FailedTrial  *JSONTrial     `json:"failed_trial,omitempty"`
	FirstTrial   *JSONTrial     `json:"first_trial,omitempty"`
	// CutTrial is the trial the interrupt cut short, with the calls it made.
	CutTrial *JSONTrial `json:"interrupted_trial,omitempty"`
	// Warnings are problems with the scenario found while it ran (runner.ScenarioResult).
	Warnings []string `json:"warnings,omitempty"`
}

// JSONSpread summarises the fan-out release spreads of a scenario, in microseconds.
type JSONSpread struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	Max     float64 `json:"max"`
}

func spreadOf(samples []float64) *JSONSpread {
	if len(samples) == 0 {
		return nil
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	at := func(q float64) float64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return &JSONSpread{Samples: len(s), P50: at(0.5), P90: at(0.9), Max: s[len(s)-1]}
}

// JSONFailure points at the scenario line that failed.
type JSONFailure struct {
	Kind        string       `json:"kind"`
	Step        string       `json:"step"`
	Pos         scenario.Pos `json:"pos"`
	Message     string       `json:"message"`
	Expression  string       `json:"expression,omitempty"`
	Explanation []string     `json:"explanation,omitempty"`
}

// JSONTrial is a trial with its call history.
type JSONTrial struct {
	Index   int           `json:"index"`
	Session string        `json:"session"`
	Passed  bool          `json:"passed"`
	Calls   []runner.Call `json:"calls"`
}

// WriteJSON writes rep as indented JSON.
func WriteJSON(w io.Writer, rep *runner.Report, version string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(generateJSON(rep, version)); err != nil {
		return fmt.Errorf("write json report: %w", err)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func jsonTrial(t *runner.Trial) *JSONTrial {
	if t == nil {
		return nil
	}
	calls := t.Calls
	if calls == nil {
		calls = []runner.Call{}
	}
	return &JSONTrial{Index: t.Index, Session: t.Session, Passed: t.Passed, Calls: calls}
}

func generateJSON(rep *runner.Report, version string) JSONReport {
	out := JSONReport{Tool: "idemtest", Version: version, Start: rep.Start, DurationMS: ms(rep.Duration), Interrupted: rep.Interrupted,
		Scenarios: []JSONScenario{}}
	if rep.Err != nil {
		out.Error = rep.Err.Error()
	}
	for _, r := range rep.Scenarios {
		js := JSONScenario{
			Name: r.Scenario.Name, File: r.Scenario.File, Line: r.Scenario.Pos.Line, Tags: r.Scenario.Tags,
			Status: r.Status, Trials: r.Trials, TrialsRun: r.TrialsRun, TrialsPassed: r.TrialsPassed, TrialsFailed: r.TrialsFailed,
			Fanouts: r.Fanouts, Overlapped: r.Overlapped,
			DurationMS: ms(r.Duration), Metrics: r.Metrics,
			FailedTrial: jsonTrial(r.FailedTrial), FirstTrial: jsonTrial(r.Trial1), CutTrial: jsonTrial(r.Cut),
			Spread: spreadOf(r.SpreadsUS), Warnings: r.Warnings,
		}
		if js.Tags == nil {
			js.Tags = []string{}
		}
		if f := r.Failure; f != nil {
			js.Failure = &JSONFailure{Kind: string(f.Kind), Step: f.Step, Pos: f.Pos, Message: f.Message, Expression: f.Expression, Explanation: f.Explanation}
		}
		switch r.Status {
		case runner.Passed:
			out.Summary.Passed++
		case runner.Failed:
			out.Summary.Failed++
		case runner.Errored:
			out.Summary.Errored++
		case runner.Skipped:
			out.Summary.Skipped++
		case runner.Interrupted:
			out.Summary.Interrupted++
		}
		out.Summary.Metrics.Add(r.Metrics)
		out.Scenarios = append(out.Scenarios, js)
	}
	return out
}
