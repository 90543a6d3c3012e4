package battery

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

func TestProfileOf(t *testing.T) {
	tests := []struct {
		name string
		want Profile
		err  string
	}{
		{name: "", want: Profile{"ietf", 400, 422, 409, matrix.Fail}},
		{name: "ietf", want: Profile{"ietf", 400, 422, 409, matrix.Fail}},
		{name: "stripe", want: Profile{"stripe", 400, 400, 409, matrix.Fail}},
		{name: "lenient", want: Profile{Name: "lenient", RefusedForever: matrix.Warn}},
		{name: "strict", err: `unknown profile "strict": use ietf, stripe or lenient`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ProfileOf(tt.name)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	for _, name := range Profiles {
		if _, err := ProfileOf(name); err != nil {
			t.Errorf("Profiles lists %q, which ProfileOf refuses: %v", name, err)
		}
	}
}

// TestRejected: a call that must be refused is ✓ with the profile's status code (any 4xx where
// the profile names none), ⚠ with another, ? when its outcome is unknown; the status code decides.
func TestRejected(t *testing.T) {
	refused := func(status int) result.Call { return result.Call{Outcome: outcome.Fail, Status: status} }
	tests := []struct {
		name    string
		profile string
		call    result.Call
		// want picks the profile's status for the situation.
		want   func(Profile) int
		status matrix.Status
		reason string
	}{
		{"no key, 400 under ietf", "ietf", refused(400), missing, matrix.Pass, "a call: rejected (status 400"},
		{"no key, 422 under ietf", "ietf", refused(422), missing, matrix.Warn, "a call: rejected with 422; the ietf profile expects 400 (safe, a protocol deviation)"},
		{"no key, 422 under lenient", "lenient", refused(422), missing, matrix.Pass, "a call: rejected (status 422)"},
		{"mismatch, 422 under ietf", "ietf", refused(422), mismatch, matrix.Pass, "a call: rejected (status 422"},
		{"mismatch, 400 under ietf", "ietf", refused(400), mismatch, matrix.Warn, "the ietf profile expects 422"},
		{"mismatch, 400 under stripe", "stripe", refused(400), mismatch, matrix.Pass, "a call: rejected (status 400"},
		{"mismatch, 422 under stripe", "stripe", refused(422), mismatch, matrix.Warn, "the stripe profile expects 400"},
		{"an MCP error has no status", "ietf", result.Call{Outcome: outcome.Fail, Error: "json-rpc error 0: bad key"}, mismatch, matrix.Pass, "a call: rejected (json-rpc error 0: bad key)"},
		{"a 5xx is no refusal", "ietf", result.Call{Outcome: outcome.Info, Status: 503}, missing, matrix.Inconclusive, "a call: the outcome is unknown (status 503)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prof, err := ProfileOf(tt.profile)
			if err != nil {
				t.Fatal(err)
			}
			b := &Battery{prof: prof}
			c := &Cell{}
			b.rejected(c, tt.call, tt.want(prof), "a call")
			if c.Status != tt.status || c.Evidence.String() != statusText || !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("got %s [%s] %q, want %s [%s] %q", c.Status.Symbol(), c.Evidence, c.Reason, tt.status.Symbol(), statusText, tt.reason)
			}
		})
	}
}

func missing(p Profile) int  { return p.Missing }
func mismatch(p Profile) int { return p.Mismatch }

// TestLead: stronger evidence goes first, and what decided the cell before follows as the weaker
// evidence agreeing (DESIGN §9).
func TestLead(t *testing.T) {
	tests := []struct {
		name             string
		cell             Cell
		evidence, showed string
		wantEvidence     string
		wantReason       string
	}{
		{"on a cell not decided yet", Cell{}, "state (ledger)", "the retry changed ledger again",
			"state (ledger)", "the retry changed ledger again"},
		{"before the answers", Cell{Evidence: ev(answersText), Reason: "1 duplicate execution(s)"}, "state (ledger)", "the retry changed ledger again",
			"state (ledger), " + answersText, "the retry changed ledger again; the answers agree: 1 duplicate execution(s)"},
		{"before a status code", Cell{Evidence: ev(statusText), Reason: "refused (status 409)"}, "sinks (mail)", "the sinks heard another execution",
			"sinks" + " (mail), " + statusText, "the sinks heard another execution; the status code agrees: refused (status 409)"},
		{"before the state", Cell{Evidence: ev("state (ledger)"), Reason: "the retry changed ledger again"}, "effects", "the declared effects counted 2",
			"effects" + ", state (ledger)", "the declared effects counted 2; the retry changed ledger again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cell
			c.lead(ev(tt.evidence)[0], tt.showed)
			if c.Evidence.String() != tt.wantEvidence || c.Reason != tt.wantReason {
				t.Errorf("got [%s] %q\nwant [%s] %q", c.Evidence, c.Reason, tt.wantEvidence, tt.wantReason)
			}
		})
	}
}

// TestWithEffects: the declared effects and the sinks, when a plan counted them, are the
// strongest evidence: named first on a ✓, turning any cell ✗ when they counted another number of
// executions, and deciding a cell that only they could.
func TestWithEffects(t *testing.T) {
	tests := []struct {
		name         string
		cell         Cell
		plan         rig.Plan
		wantStatus   matrix.Status
		wantEvidence string
		wantReason   string
	}{
		{"no effects declared leave the cell as it is",
			Cell{Status: matrix.Pass, Evidence: ev(answersText), Reason: "the retry got the stored answer"}, rig.Plan{Executions: 1},
			matrix.Pass, answersText, "the retry got the stored answer"},
		{"effects that held go first on a ✓",
			Cell{Status: matrix.Pass, Evidence: ev(answersText), Reason: "the retry got the stored answer"}, rig.Plan{Executions: 1, Effects: "(len(paid)) == 1"},
			matrix.Pass, "effects" + ", " + answersText, "the retry got the stored answer"},
		{"effects that failed turn a ✓ into ✗",
			Cell{Status: matrix.Pass, Evidence: ev(answersText), Reason: "the retry got the stored answer"}, rig.Plan{Executions: 1, Effects: "(len(paid)) == 1", EffectsLines: []string{"declared effects: (len(paid)) == 1 is false"}},
			matrix.Fail, "effects" + ", " + answersText, "the declared effects counted another number of executions than 1"},
		{"effects that failed lead a ✗",
			Cell{Status: matrix.Fail, Evidence: ev(answersText), Reason: "1 duplicate execution(s)"}, rig.Plan{Executions: 1, Effects: "(len(paid)) == 1", EffectsLines: []string{"declared effects: (len(paid)) == 1 is false"}},
			matrix.Fail, "effects" + ", " + answersText, "the declared effects counted another number of executions than 1; the answers agree: 1 duplicate execution(s)"},
		{"effects that held decide what only they could",
			Cell{Status: matrix.Inconclusive, Reason: "the retry was executed, not replayed"}, rig.Plan{Executions: 1, Effects: "(len(paid)) == 1", NeedsEvidence: true},
			matrix.Inconclusive, "effects", "the retry's answer is not marked as a replay and the declared effects count 1 execution(s): " + neverRan},
		{"sinks that heard more decide what only they could",
			Cell{Status: matrix.Inconclusive, Reason: "the retry was executed, not replayed"}, rig.Plan{Executions: 1, NeedsEvidence: true, SinksAsserted: true, SinkNames: []string{"mail"}, SinkLines: []string{"sink mail received 2 requests; 1 execution(s) send 1"}},
			matrix.Fail, "sinks (mail)", "the sinks heard another execution: sink mail received 2 requests; 1 execution(s) send 1"},
		{"sinks that heard fewer requests say so, not another execution",
			Cell{Status: matrix.Inconclusive, Reason: "the retry was executed, not replayed"}, rig.Plan{Executions: 1, NeedsEvidence: true, SinksAsserted: true, SinkNames: []string{"ledger"}, SinksFewer: true, SinkLines: []string{"sink ledger received 0 requests; 1 execution(s) send 1"}},
			matrix.Fail, "sinks (ledger)", "the sinks heard fewer requests than 1 execution(s) send: sink ledger received 0 requests; 1 execution(s) send 1"},
		{"a skipped cell stays skipped",
			Cell{Status: matrix.Skip, Reason: "no argument to vary"}, rig.Plan{Executions: 1, Effects: "(len(paid)) == 1", EffectsLines: []string{"declared effects: (len(paid)) == 1 is false"}},
			matrix.Skip, "", "no argument to vary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Battery{Rig: &rig.Rig{}}
			c := tt.cell
			plan := tt.plan
			c.plan = &plan
			got := b.withEffects(&c)
			if got.Status != tt.wantStatus || got.Evidence.String() != tt.wantEvidence || got.Reason != tt.wantReason {
				t.Errorf("got %s [%s] %q\nwant %s [%s] %q", got.Status.Symbol(), got.Evidence, got.Reason, tt.wantStatus.Symbol(), tt.wantEvidence, tt.wantReason)
			}
			if tt.wantStatus == matrix.Fail && len(plan.EffectsLines) > 0 && (len(got.Details) == 0 || got.Details[0] != plan.EffectsLines[0]) {
				t.Errorf("details %q do not begin with what the effects showed", got.Details)
			}
		})
	}
}

// TestProofOf: keys are shown to work by a retry that was not executed again (✓), or one refused
// by its status code (the key was recognised); an executed retry or an unknown outcome shows
// nothing.
func TestProofOf(t *testing.T) {
	tests := []struct {
		name string
		cell Cell
		work bool
	}{
		{"a replay", Cell{Check: Replay, Status: matrix.Pass, Evidence: ev(answersText), Reason: "the retry got the stored answer"}, true},
		{"a retry refused for ever", Cell{Check: Replay, Status: matrix.Fail, Evidence: ev(statusText), Reason: "every retry was refused"}, true},
		{"a retry refused", Cell{Check: LostResponse, Status: matrix.Warn, Evidence: ev(statusText), Reason: "the retry was refused"}, true},
		{"a retry executed again", Cell{Check: Replay, Status: matrix.Fail, Evidence: ev(answersText), Reason: "1 duplicate execution(s)"}, false},
		{"content dedupe", Cell{Check: Replay, Status: matrix.Warn, Evidence: ev("state (ledger), answers"), Reason: "deduplicates by content"}, false},
		{"no evidence", Cell{Check: Replay, Status: matrix.Inconclusive, Reason: "the answers carry no id"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := proofOf(&tt.cell)
			if p.work != tt.work {
				t.Errorf("work = %v, want %v", p.work, tt.work)
			}
			if want := tt.cell.Check + " " + tt.cell.Status.Symbol() + " " + firstClause(tt.cell.Reason); p.why != want {
				t.Errorf("why = %q, want %q", p.why, want)
			}
		})
	}
}

func TestGiveUpPoints(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		execution time.Duration
		want      []time.Duration
	}{
		{0, []time.Duration{ms}},
		{ms, []time.Duration{ms}},
		{5 * ms, []time.Duration{ms, 2 * ms, 4 * ms}},
		{8 * ms, []time.Duration{ms, 2 * ms, 4 * ms}},
		{9 * ms, []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms}},
		{time.Hour, nil}, // capped: maxGiveUps points
	}
	for _, tt := range tests {
		got := giveUpPoints(tt.execution)
		if tt.want == nil {
			if len(got) != maxGiveUps || got[maxGiveUps-1] != (1<<(maxGiveUps-1))*ms {
				t.Errorf("giveUpPoints(%s) = %v, want %d points up to %s", tt.execution, got, maxGiveUps, (1<<(maxGiveUps-1))*ms)
			}
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("giveUpPoints(%s) = %v, want %v", tt.execution, got, tt.want)
		}
	}
}

// TestSavedRepeats: a saved scenario repeats what check ran, within bounds that keep it worth
// running and quick.
func TestSavedRepeats(t *testing.T) {
	for _, tt := range []struct {
		name    string
		f       func(int) int
		n, want int
	}{
		{"rounds: at least 20", savedRounds, 1, 20},
		{"rounds: as many as check ran", savedRounds, 300, 300},
		{"rounds: at most 1000", savedRounds, maxRounds, 1000},
		{"trials: at least 5", savedTrials, 1, 5},
		{"trials: as many as check ran", savedTrials, 12, 12},
		{"trials: at most 50", savedTrials, 400, 50},
	} {
		if got := tt.f(tt.n); got != tt.want {
			t.Errorf("%s: %d gives %d, want %d", tt.name, tt.n, got, tt.want)
		}
	}
}

func TestQuantiles(t *testing.T) {
	for _, tt := range []struct {
		xs       []float64
		p50, max float64
	}{
		{nil, 0, 0},
		{[]float64{7}, 7, 7},
		{[]float64{30, 10, 20}, 20, 30},
		{[]float64{4, 1, 3, 2}, 3, 4},
	} {
		xs := slices.Clone(tt.xs)
		p50, maxv := quantiles(tt.xs)
		if p50 != tt.p50 || maxv != tt.max {
			t.Errorf("quantiles(%v) = %v, %v; want %v, %v", tt.xs, p50, maxv, tt.p50, tt.max)
		}
		if !slices.Equal(xs, tt.xs) {
			t.Errorf("quantiles sorted its argument: %v", tt.xs)
		}
	}
}

func TestInsertAt(t *testing.T) {
	steps := []scenariogen.Step{{ID: "first"}, {ID: "retry"}}
	extra := scenariogen.Step{ID: "sleep"}
	ids := func(ss []scenariogen.Step) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return strings.Join(out, " ")
	}
	for _, tt := range []struct {
		id    string
		after bool
		want  string
	}{
		{"retry", false, "first sleep retry"},
		{"first", true, "first sleep retry"},
		{"retry", true, "first retry sleep"},
		{"missing", false, "first retry"},
	} {
		if got := ids(insertAt(steps, tt.id, tt.after, extra)); got != tt.want {
			t.Errorf("insertAt(%s, after %v) = %s, want %s", tt.id, tt.after, got, tt.want)
		}
	}
	if got := ids(steps); got != "first retry" {
		t.Errorf("insertAt changed the steps it was given: %s", got)
	}
}

// TestIDs: the matrix's columns are the registered checks, in order, each id once; an id nobody
// registered is a skipped cell, never a panic.
func TestIDs(t *testing.T) {
	want := []string{Replay, LostResponse, TimeoutRetry, Concurrent, PayloadMismatch, MismatchInFlight, DistinctKeys, KeyScope, MissingKey, ErrorsNotReplayed, Expiry, Annotations}
	if !slices.Equal(IDs, want) {
		t.Errorf("IDs = %v, want %v", IDs, want)
	}
	c := (&Battery{}).cell("no-such-check", toolset.ToolInfo{}, nil)
	if c.Status != matrix.Skip || c.Reason != "not implemented" {
		t.Errorf("unknown check: %+v", c)
	}
}

// Evidence as the matrix shows it: the tables read as a reader of the matrix does.
var (
	answersText = byAnswers().String()
	statusText  = byStatus().String()
)

// ev reads evidence written as the matrix shows it.
func ev(s string) matrix.Evidences { return matrix.ParseEvidences(s) }
