package jsonreport

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/safejson"
	"github.com/idemtest/idemtest/internal/scenario"
)

// JSONVersion is the version of the JSON report's format: it changes when a field is removed or
// changes meaning, not when one is added. docs/reports.md, "The JSON report", documents it.
const JSONVersion = 1

// MaxJSONAnswer caps each answer kept in the JSON report, in bytes of compact JSON: a larger
// answer is kept as the string of its first bytes, with answer_bytes saying how long it was.
const MaxJSONAnswer = result.MaxAnswer

// The JSON report uses one time unit: instants are RFC 3339 timestamps (start), and every
// duration and offset is a number of microseconds in a field ending in _us. A call's offsets
// are from the start of its trial, so that calls of one trial lie on one axis.

// JSONReport is the machine-readable report: every trial of every scenario with every call.
type JSONReport struct {
	Version int `json:"version"`
	// Report is the command whose report this is ("run"), as a baseline checks.
	Report          string         `json:"report"`
	Tool            string         `json:"tool"`
	IdemtestVersion string         `json:"idemtest_version"`
	Start           time.Time      `json:"start"`
	DurationUS      float64        `json:"duration_us"`
	Interrupted     bool           `json:"interrupted"`
	Error           string         `json:"error,omitempty"`
	Summary         JSONSummary    `json:"summary"`
	Scenarios       []JSONScenario `json:"scenarios"`
	// Regressions classifies the failures against --baseline.
	Regressions *baseline.Result `json:"regressions,omitempty"`
	// Coverage lists each endpoint's mutating tools no scenario called.
	Coverage []result.Coverage `json:"coverage,omitempty"`
	// Shard is which job of a suite split with --shard K/N this is; 1/1 unsharded.
	Shard result.Shard `json:"shard"`
}

// JSONSummary counts scenarios by status and sums the metrics. A run whose services did not
// start counts one errored, as JUnit does.
type JSONSummary struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Errored int `json:"errored"`
	Skipped int `json:"skipped"`
	// Interrupted counts the scenarios the interrupt stopped before they finished.
	Interrupted int            `json:"interrupted"`
	Metrics     result.Metrics `json:"metrics"`
}

// JSONScenario is one scenario's result with its history.
type JSONScenario struct {
	Name string `json:"name"`
	File string `json:"file"`
	Line int    `json:"line"`
	// Config is the idemtest.yaml merged into the scenario (given with --config or found), as
	// a rerun must name it; absent without one.
	Config       string         `json:"config,omitempty"`
	Tags         []string       `json:"tags"`
	Status       result.Status  `json:"status"`
	Trials       int            `json:"trials"`
	TrialsRun    int            `json:"trials_run"`
	TrialsPassed int            `json:"trials_passed"`
	TrialsFailed int            `json:"trials_failed"`
	Fanouts      int            `json:"fanouts"`
	Overlapped   int            `json:"fanouts_overlapped"`
	Start        time.Time      `json:"start,omitzero"`
	DurationUS   float64        `json:"duration_us"`
	Metrics      result.Metrics `json:"metrics"`
	Spread       *JSONSpread    `json:"spread_us,omitempty"`
	// Failure is the first failure, found in trial FailedTrial.
	Failure     *JSONFailure `json:"failure,omitempty"`
	FailedTrial int          `json:"failed_trial,omitempty"`
	// History is every trial started, in order; one cut short by an interrupt has cut set.
	History []JSONTrial `json:"history"`
	// Warnings are problems with the scenario found while it ran (result.ScenarioResult).
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

// JSONFailure points at the scenario line that failed and explains it.
type JSONFailure struct {
	Kind        result.FailureKind `json:"kind"`
	Step        string             `json:"step"`
	Pos         scenario.Pos       `json:"pos"`
	Message     string             `json:"message"`
	Expression  string             `json:"expression,omitempty"`
	Explanation []string           `json:"explanation,omitempty"`
	// Verdict states each exactly-once violation of the trial with its likely cause.
	Verdict []string `json:"verdict,omitempty"`
	// Violation and Tool name a verdict failure's violation (its identity in a baseline).
	Violation string `json:"violation,omitempty"`
	Tool      string `json:"tool,omitempty"`
	// Violations names every exactly-once violation of the trial, also under another failure.
	Violations []result.Violation `json:"violations,omitempty"`
	// ServiceOutput is what each service wrote while the failing trial ran, by name.
	ServiceOutput map[string]string `json:"service_output,omitempty"`
}

// JSONTrial is a trial with every call it made.
type JSONTrial struct {
	Index      int          `json:"index"`
	Session    string       `json:"session"`
	Passed     bool         `json:"passed"`
	Cut        bool         `json:"cut,omitempty"`
	Start      time.Time    `json:"start,omitzero"`
	DurationUS float64      `json:"duration_us"`
	Failure    *JSONFailure `json:"failure,omitempty"`
	Calls      []JSONCall   `json:"calls"`
}

// JSONCall is one request: what was sent, what came back and when, from the trial's start.
type JSONCall struct {
	Step     string `json:"step"`
	Tool     string `json:"tool"`
	Endpoint string `json:"endpoint"`
	// Instance is the instance of an endpoint of several that the call went to: its index
	// (from 1) and URL. Absent for an endpoint of one instance.
	Instance *endpoint.Instance `json:"instance,omitempty"`
	Copy     int                `json:"copy"`
	Attempt  int                `json:"attempt"`
	Key      string             `json:"key"`
	Args     map[string]any     `json:"arguments"`
	Outcome  outcome.Outcome    `json:"outcome"`
	Status   int                `json:"status"`
	Replayed bool               `json:"replayed"`
	Conflict bool               `json:"conflict"`
	Lost     bool               `json:"lost"`
	// Discarded is the outcome the answer lose_response discarded had (ok when it executed).
	Discarded outcome.Outcome `json:"discarded,omitempty"`
	Error     string          `json:"error,omitempty"`
	// TraceID is the W3C trace id the call carried (traceparent): the server's trace of it.
	TraceID string `json:"trace_id,omitempty"`
	// Answer is the decoded answer (JSON body, MCP structured or text content), also when
	// lose_response discarded it; AnswerBytes is set when it was cut to MaxJSONAnswer.
	Answer      any      `json:"answer,omitempty"`
	AnswerBytes int      `json:"answer_bytes,omitempty"`
	StartUS     float64  `json:"start_us"`
	SentUS      *float64 `json:"sent_us,omitempty"`
	AnsweredUS  *float64 `json:"answered_us,omitempty"`
	DurationUS  float64  `json:"duration_us"`
}

// Write writes rep as indented JSON.
func Write(w io.Writer, rep *result.Report, version string) error {
	if err := encode(w, generate(rep, version)); err != nil {
		return fmt.Errorf("write json report: %w", err)
	}
	return nil
}

// encode writes v as indented JSON, its string values escaped (safejson): the one encoder of
// the run, check, sweep, proxy and tools reports.
func encode(w io.Writer, v any) error {
	return safejson.Encode(w, v, "  ")
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

func fromUS(v float64) time.Duration { return time.Duration(math.Round(v * 1000)) }

func jsonFailure(f *result.Failure) *JSONFailure {
	if f == nil {
		return nil
	}
	return &JSONFailure{Kind: f.Kind, Step: f.Step, Pos: f.Pos, Message: f.Message, Expression: f.Expression,
		Explanation: f.Explanation, Verdict: f.Verdict, Violation: f.Violation, Tool: f.Tool, Violations: f.Violations, ServiceOutput: f.ServiceOutput}
}

func jsonTrial(t *result.Trial, cut bool) JSONTrial {
	out := JSONTrial{Index: t.Index, Session: t.Session, Passed: t.Passed, Cut: cut, Start: t.Start,
		DurationUS: us(t.Duration), Failure: jsonFailure(t.Failure), Calls: make([]JSONCall, 0, len(t.Calls))}
	t0 := t.Start
	if t0.IsZero() && len(t.Calls) > 0 {
		t0 = t.Calls[0].Start
	}
	at := func(ts time.Time) *float64 {
		if ts.IsZero() {
			return nil
		}
		v := us(ts.Sub(t0))
		return &v
	}
	for _, c := range t.Calls {
		jc := JSONCall{Step: c.Step, Tool: c.Tool, Endpoint: c.Endpoint, Instance: c.Instance, Copy: c.Copy, Attempt: c.Attempt, Key: c.Key,
			Args: c.Args, Outcome: c.Outcome, Status: c.Status, Replayed: c.Replayed, Conflict: c.Conflict, Lost: c.Lost,
			Discarded: c.Discarded, Error: c.Error, TraceID: c.TraceID, StartUS: us(c.Start.Sub(t0)), SentUS: at(c.Sent), AnsweredUS: at(c.Answered), DurationUS: us(c.Duration)}
		if jc.Args == nil {
			jc.Args = map[string]any{}
		}
		jc.Answer, jc.AnswerBytes = capAnswer(c.Result)
		out.Calls = append(out.Calls, jc)
	}
	return out
}

// capAnswer keeps an answer whole when its compact JSON fits MaxJSONAnswer, else the string of
// its first bytes and its length.
func capAnswer(v any) (any, int) {
	if v == nil {
		return nil, 0
	}
	if t, ok := v.(cutAnswer); ok {
		return t.text, t.bytes
	}
	if t, ok := v.(result.CutAnswer); ok { // an answer of a trial the runner released
		return t.Text, t.Bytes
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v), 0
	}
	if len(b) <= MaxJSONAnswer {
		return v, 0
	}
	cut := MaxJSONAnswer
	for cut > 0 && b[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return string(b[:cut]) + "…", len(b)
}

func generate(rep *result.Report, version string) JSONReport {
	out := JSONReport{Version: JSONVersion, Report: "run", Tool: "idemtest", Regressions: rep.Regressions, Coverage: rep.Coverage, IdemtestVersion: version, Start: rep.Start, DurationUS: us(rep.Duration),
		Interrupted: rep.Interrupted, Scenarios: []JSONScenario{}, Shard: rep.Shard.OrWhole()}
	if rep.Err != nil {
		out.Error = rep.Err.Error()
		out.Summary.Errored++
	}
	for _, r := range rep.Scenarios {
		js := JSONScenario{
			Name: r.Scenario.Name, File: r.Scenario.File, Line: r.Scenario.Pos.Line, Config: r.Scenario.Config, Tags: r.Scenario.Tags,
			Status: r.Status, Trials: r.Trials, TrialsRun: r.TrialsRun, TrialsPassed: r.TrialsPassed, TrialsFailed: r.TrialsFailed,
			Fanouts: r.Fanouts, Overlapped: r.Overlapped, Start: r.Start,
			DurationUS: us(r.Duration), Metrics: r.Metrics, Failure: jsonFailure(r.Failure),
			Spread: spreadOf(r.SpreadsUS), History: []JSONTrial{}, Warnings: r.Warnings,
		}
		if js.Tags == nil {
			js.Tags = []string{}
		}
		if r.FailedTrial != nil {
			js.FailedTrial = r.FailedTrial.Index
		}
		for _, t := range historyOf(r) {
			jt := jsonTrial(t, t == r.Cut)
			if t == r.FailedTrial {
				jt.Failure = nil // the scenario's failure
			}
			js.History = append(js.History, jt)
		}
		switch r.Status {
		case result.Passed:
			out.Summary.Passed++
		case result.Failed:
			out.Summary.Failed++
		case result.Errored:
			out.Summary.Errored++
		case result.Skipped:
			out.Summary.Skipped++
		case result.Interrupted:
			out.Summary.Interrupted++
		}
		out.Summary.Metrics.Add(r.Metrics)
		out.Scenarios = append(out.Scenarios, js)
	}
	return out
}

// historyOf is every trial of r, in order; a result built without History (check's in-memory
// scenarios keep it, tests may not) falls back to the trials it names.
func historyOf(r *result.ScenarioResult) []*result.Trial {
	if len(r.History) > 0 {
		return r.History
	}
	var out []*result.Trial
	for _, t := range []*result.Trial{r.Trial1, r.FailedTrial, r.Cut} {
		if t != nil && (len(out) == 0 || out[len(out)-1] != t) {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// Read reads a JSON report back into the run it describes, for reporters to render again
// (reports recorded from real runs are the reporters' test data). Answers cut to MaxJSONAnswer
// come back as their strings.
func Read(r io.Reader) (*result.Report, error) {
	var in JSONReport
	if err := json.NewDecoder(r).Decode(&in); err != nil {
		return nil, fmt.Errorf("read json report: %w", err)
	}
	if in.Version != JSONVersion {
		return nil, fmt.Errorf("read json report: format version %d, want %d", in.Version, JSONVersion)
	}
	rep := &result.Report{Start: in.Start, Duration: fromUS(in.DurationUS), Interrupted: in.Interrupted,
		Regressions: in.Regressions, Coverage: in.Coverage, Shard: in.Shard}
	if in.Error != "" {
		rep.Err = reportError(in.Error)
	}
	for _, s := range in.Scenarios {
		r := &result.ScenarioResult{
			Scenario: &scenario.Scenario{Name: s.Name, File: s.File, Pos: scenario.Pos{File: s.File, Line: s.Line, Col: 1}, Config: s.Config, Tags: s.Tags},
			Status:   s.Status, Trials: s.Trials, TrialsRun: s.TrialsRun, TrialsPassed: s.TrialsPassed, TrialsFailed: s.TrialsFailed,
			Fanouts: s.Fanouts, Overlapped: s.Overlapped, Start: s.Start, Duration: fromUS(s.DurationUS), Metrics: s.Metrics,
			Failure: runnerFailure(s.Failure),
		}
		if s.Spread != nil {
			r.SpreadsUS = samplesOf(*s.Spread)
		}
		for _, jt := range s.History {
			t := runnerTrial(jt)
			r.History = append(r.History, t)
			switch {
			case jt.Cut:
				r.Cut = t
			case jt.Index == 1:
				r.Trial1 = t
			}
			if jt.Index == s.FailedTrial && !jt.Cut {
				r.FailedTrial = t
				if t.Failure == nil {
					t.Failure = r.Failure
				}
				r.Failure = t.Failure
			}
		}
		rep.Scenarios = append(rep.Scenarios, r)
	}
	return rep, nil
}

// samplesOf makes spread samples whose summary is sp: only the summary is reported.
func samplesOf(sp JSONSpread) []float64 {
	n := sp.Samples
	out := make([]float64, n)
	i50, i90 := min(n-1, n/2), min(n-1, int(0.9*float64(n)))
	for i := range out {
		switch {
		case i <= i50:
			out[i] = sp.P50
		case i <= i90:
			out[i] = sp.P90
		default:
			out[i] = sp.Max
		}
	}
	if n > 0 && i90 < n-1 {
		out[n-1] = sp.Max
	}
	return out
}

// cutAnswer is an answer read back from a report that had cut it.
type cutAnswer struct {
	text  string
	bytes int
}

// String is the kept beginning of the answer.
func (c cutAnswer) String() string { return c.text }

// MarshalJSON writes the kept beginning as a JSON string.
func (c cutAnswer) MarshalJSON() ([]byte, error) { return json.Marshal(c.text) }

type reportError string

func (e reportError) Error() string { return string(e) }

func runnerFailure(f *JSONFailure) *result.Failure {
	if f == nil {
		return nil
	}
	return &result.Failure{Kind: f.Kind, Step: f.Step, Pos: f.Pos, Message: f.Message, Expression: f.Expression,
		Explanation: f.Explanation, Verdict: f.Verdict, Violation: f.Violation, Tool: f.Tool, Violations: f.Violations, ServiceOutput: f.ServiceOutput}
}

func runnerTrial(jt JSONTrial) *result.Trial {
	t := &result.Trial{Index: jt.Index, Session: jt.Session, Passed: jt.Passed, Start: jt.Start, Duration: fromUS(jt.DurationUS),
		Failure: runnerFailure(jt.Failure)}
	at := func(v *float64) time.Time {
		if v == nil {
			return time.Time{}
		}
		return jt.Start.Add(fromUS(*v))
	}
	for _, c := range jt.Calls {
		if s, ok := c.Answer.(string); ok && c.AnswerBytes > 0 {
			c.Answer = cutAnswer{s, c.AnswerBytes}
		}
		t.Calls = append(t.Calls, result.Call{Step: c.Step, Tool: c.Tool, Endpoint: c.Endpoint, Instance: c.Instance, Copy: c.Copy, Attempt: c.Attempt,
			Key: c.Key, Args: c.Args, Outcome: c.Outcome, Status: c.Status, Replayed: c.Replayed, Conflict: c.Conflict, Lost: c.Lost,
			Discarded: c.Discarded, Error: c.Error, TraceID: c.TraceID, Start: jt.Start.Add(fromUS(c.StartUS)), Duration: fromUS(c.DurationUS), Sent: at(c.SentUS),
			Answered: at(c.AnsweredUS), Result: c.Answer})
	}
	return t
}
