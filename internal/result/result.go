package result

import (
	"strconv"
	"time"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenario"
)

// Status is how a scenario ended.
type Status string

// The ways a scenario ends.
const (
	Passed  Status = "passed"
	Failed  Status = "failed"
	Errored Status = "errored"
	Skipped Status = "skipped"
	// Interrupted: the run was interrupted (Ctrl-C, SIGTERM) before the scenario finished, so
	// there is no verdict on the tool. A failure found in an earlier trial still makes it Failed.
	Interrupted Status = "interrupted"
)

// Report is the outcome of a run, everything the reporters need.
type Report struct {
	Scenarios   []*ScenarioResult
	Start       time.Time
	Duration    time.Duration
	Interrupted bool
	// Err is a run-level error (a service that did not start); scenarios did not run.
	Err error
	// Regressions classifies the failures against a baseline (nil without --baseline).
	Regressions *baseline.Result
	// Coverage lists, per endpoint, the mutating tools no scenario called (nil when not
	// computed).
	Coverage []Coverage
	// Shard is which of the jobs a sharded suite was split into ran (zero: unsharded).
	Shard Shard
}

// Shard is which job of a suite split with --shard K/N a report is: Index K of Total N, from 1.
// Every report records it so that report merge can tell a missing shard; an unsharded report
// is shard 1 of 1.
type Shard struct {
	Index int `json:"index"`
	Total int `json:"total"`
}

// OrWhole is s, or shard 1 of 1 when s is zero (unsharded, or read from a report written
// before reports carried their shard).
func (s Shard) OrWhole() Shard {
	if s.Total == 0 {
		return Shard{Index: 1, Total: 1}
	}
	return s
}

// String is the shard as --shard takes it: "K/N".
func (s Shard) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Total) }

// Failed reports whether anything failed or errored.
func (r *Report) Failed() bool {
	if r.Err != nil {
		return true
	}
	for _, s := range r.Scenarios {
		// A key executed twice fails the run, whatever else happened to the trial.
		if s.Status == Failed || s.Status == Errored || s.Metrics.DuplicateExecutions > 0 || s.Metrics.ReplaysDiffer > 0 {
			return true
		}
	}
	return false
}

// ScenarioResult is one scenario's result over its trials.
type ScenarioResult struct {
	Scenario     *scenario.Scenario
	Status       Status
	Trials       int // trials asked for
	TrialsRun    int
	TrialsPassed int
	// Failure is the first failure; FailedTrial the trial it happened in.
	Failure     *Failure
	FailedTrial *Trial
	// Trial1 is the first trial, kept for reports when nothing failed.
	Trial1 *Trial
	// Cut is the trial the interrupt cut short, with the calls it made; it is not counted in
	// TrialsRun and says nothing about the tool.
	Cut *Trial
	// History is every trial started, in order, with all its calls: Trial1, FailedTrial and Cut
	// are among them.
	History []*Trial
	Metrics Metrics
	// SpreadsUS holds each fan-out's release spread in microseconds, up to MaxSpreadSamples.
	SpreadsUS []float64
	// Fanouts counts the fan-outs run; Overlapped those whose copies were all released before
	// the first answer came back. A fan-out that did not overlap proved nothing about races.
	Fanouts, Overlapped int
	// TrialsFailed counts the trials that failed (every trial runs unless --fail-fast).
	TrialsFailed int
	Start        time.Time
	Duration     time.Duration
	// Warnings are problems with the scenario itself found while it ran (an assertion reading
	// an answer field no answer had), once each.
	Warnings []string
}

// MaxSpreadSamples bounds the spreads kept per scenario.
const MaxSpreadSamples = 10000

// Trial is one run of a scenario's steps with its own session.
type Trial struct {
	Index   int
	Session string
	Passed  bool
	Failure *Failure
	Calls   []Call
	// Start is when the trial began; Duration how long it ran.
	Start    time.Time
	Duration time.Duration
}

// Failure says why a trial failed, pointing at the scenario line.
type Failure struct {
	Kind        FailureKind
	Step        string
	Pos         scenario.Pos
	Message     string
	Expression  string
	Explanation []string
	// Verdict states each exactly-once violation of the trial in words, with its likely cause
	// on the server ("key k executed 16 times (issue_refund) — the server's check-and-store is
	// not atomic: …"), for reports to lead with whatever else failed the trial.
	Verdict []string
	// Violation and Tool name the exactly-once violation of a verdict failure ("double-execution"
	// on "issue_refund"): with the kind and step, the failure's identity in a baseline.
	Violation string
	Tool      string
	// Violations names every exactly-once violation of the trial, also when another failure
	// (an assertion) came first: each is part of the failure's identity in a baseline, so a
	// double execution under a known assertion failure is new.
	Violations []Violation
	// VerdictLines counts the lines at the end of Explanation that explain the exactly-once
	// verdict when another failure (an assertion) came first: a heading and the violations.
	VerdictLines int
	// ServiceOutput is the tail of each service's output when the trial failed, by name.
	ServiceOutput map[string]string
}

// Violation names one exactly-once violation by its stable parts: its kind
// ("double-execution", "replay-differs", "unprovable"), its tool and the step of the key's first
// call; never the key, a time or an id.
type Violation struct {
	Kind string `json:"violation"`
	Tool string `json:"tool"`
	Step string `json:"step"`
}

// FailureKind says what failed a trial.
type FailureKind string

const (
	// FailAssert: an assertion was false.
	FailAssert FailureKind = "assert"
	// FailExpect: a call's outcome was not the one expected.
	FailExpect FailureKind = "expect"
	// FailVerdict: a key was not executed exactly once (DESIGN §8).
	FailVerdict FailureKind = "verdict"
	// FailError: the step could not run.
	FailError FailureKind = "error"
)

// StepFailure is a failure of kind at step, with msg as its message.
func StepFailure(kind FailureKind, step *scenario.Step, msg string) *Failure {
	return &Failure{Kind: kind, Step: step.ID, Pos: step.Pos, Message: msg}
}

// StepError is the failure of a step that could not run because of err.
func StepError(step *scenario.Step, err error) *Failure {
	return StepFailure(FailError, step, err.Error())
}

// Call is one request in a trial's history: the second of a call's five shapes (doc.go), which
// the runner records from an endpoint.Result with the step, copy, attempt and key that made it.
// Reports, check and sweep read it; the JSON report writes it as a JSONCall and reads it back
// (merge, the gate). assert.CallResult
// (what an expression sees), verdict.Call (what the verdict judges) and trace.Call (a trace
// line) are narrower views of it for consumers that must not import it.
type Call struct {
	Step     string `json:"step"`
	Tool     string `json:"tool"`
	Endpoint string `json:"endpoint"`
	// Instance is the instance of an endpoint of several that the call went to (DESIGN §11),
	// nil for an endpoint of one.
	Instance *endpoint.Instance `json:"instance,omitempty"`
	Copy     int                `json:"copy"`
	Attempt  int                `json:"attempt"`
	Key      string             `json:"key"`
	Outcome  outcome.Outcome    `json:"outcome"`
	Status   int                `json:"status"`
	Replayed bool               `json:"replayed"`
	Conflict bool               `json:"conflict"`
	// Lost marks a response the harness discarded (lose_response); Outcome is then info and
	// Status what the server really answered.
	Lost bool `json:"lost,omitempty"`
	// Discarded is the outcome of the answer lose_response discarded ("" when none was).
	Discarded outcome.Outcome `json:"discarded,omitempty"`
	Error     string          `json:"error,omitempty"`
	// TraceID is the W3C trace id the call carried (traceparent): the server's own trace of it.
	TraceID  string        `json:"trace_id,omitempty"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration_ns"`
	// Sent is when the request's last byte left; Answered when its answer began to arrive.
	Sent     time.Time `json:"sent,omitzero"`
	Answered time.Time `json:"answered,omitzero"`
	// Result is the decoded answer, also when lose_response discarded it (for check's state
	// comparisons); reports leave it out. In a released trial (Trial.Release) an answer larger
	// than MaxAnswer is a CutAnswer.
	Result any `json:"-"`
	// Args are the arguments sent, without the key argument the endpoint adds; reports leave
	// them out (a trace keeps them).
	Args map[string]any `json:"-"`
	// Mutating reports whether the call was treated as mutating (sent with a key, or without
	// one on purpose).
	Mutating bool `json:"-"`
}

// Metrics sums the idempotency behaviour seen over all trials of a scenario.
type Metrics struct {
	Calls     int `json:"calls"`
	OK        int `json:"ok"`
	Fail      int `json:"fail"`
	Info      int `json:"info"`
	Replayed  int `json:"replayed"`
	Conflicts int `json:"conflicts"`
	// Keyed counts the calls that carried an idempotency key.
	Keyed int `json:"keyed"`
	// Retries counts the calls that sent a key again after an earlier step or attempt had sent
	// it; Copies the fan-out copies beyond the first of their key (concurrent duplicates, not
	// retries). Replayed counts the answers marked as replays and those equal to an earlier
	// answer to their key, among both: the replay rate is Replayed/Repeats().
	Retries int `json:"retries"`
	Copies  int `json:"concurrent_copies"`
	// SpreadMaxUS is the widest fan-out release spread seen, in microseconds.
	SpreadMaxUS float64 `json:"spread_max_us"`
	// DuplicateExecutions counts, per key, the executions beyond the first that the
	// exactly-once verdict found (DESIGN §8).
	DuplicateExecutions int `json:"duplicate_executions"`
	// ReplaysDiffer counts the keys whose marked replay was not their first answer.
	ReplaysDiffer int `json:"replays_differ"`
	// Unjudged lists, per tool and reason, the calls the verdict did not judge.
	Unjudged []Unjudged `json:"unjudged,omitempty"`
}

// Add sums m and o.
func (m *Metrics) Add(o Metrics) {
	m.Calls += o.Calls
	m.OK += o.OK
	m.Fail += o.Fail
	m.Info += o.Info
	m.Replayed += o.Replayed
	m.Conflicts += o.Conflicts
	m.Keyed += o.Keyed
	m.Retries += o.Retries
	m.Copies += o.Copies
	m.SpreadMaxUS = max(m.SpreadMaxUS, o.SpreadMaxUS)
	m.DuplicateExecutions += o.DuplicateExecutions
	m.ReplaysDiffer += o.ReplaysDiffer
	for _, u := range o.Unjudged {
		m.AddUnjudged(u)
	}
}

// Repeats counts the calls that sent a key again, sequentially or concurrently: the calls a
// replay can answer.
func (m Metrics) Repeats() int { return m.Retries + m.Copies }
