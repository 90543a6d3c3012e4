package battery

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenariogen"
)

// Cell is one check of one tool.
type Cell struct {
	Check  string        `json:"check"`
	Status matrix.Status `json:"status"`
	// Reason is one line: why the cell is what it is.
	Reason string `json:"reason,omitempty"`
	// EvidenceText is Evidence as a reader sees it ("state (list_refunds), status code"), as the
	// JSON report has always had it; Battery.Cell sets it.
	EvidenceText string `json:"evidence,omitempty"`
	// Evidence names what decided, strongest first: the effects, the sinks, the state, the
	// answers (the exactly-once verdict, DESIGN §8) or the status code.
	Evidence matrix.Evidences `json:"evidence_items,omitempty"`
	// Details explain a cell that is not ✓: the failure and the call history.
	Details []string `json:"details,omitempty"`
	// Rounds, Overlapped and the spread describe the concurrent check.
	Rounds      int     `json:"rounds,omitempty"`
	Overlapped  int     `json:"overlapped,omitempty"`
	SpreadP50US float64 `json:"spread_p50_us,omitempty"`
	SpreadMaxUS float64 `json:"spread_max_us,omitempty"`
	// Replayed reports that the server replayed a stored answer in this check.
	Replayed bool `json:"replayed,omitempty"`
	// Session and Keys find a ✗ cell's calls in the server's data: the session of the trial
	// that decided it (what {{ session }} was in its arguments) and the keys its calls carried.
	// Every ✗ cell has them, and its Details list the calls, whatever evidence decided it.
	Session  string        `json:"session,omitempty"`
	Keys     []string      `json:"keys,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// replaysDiffer is set when a marked replay differed from the stored answer.
	replaysDiffer bool
	// twice is set when the check showed a same-key call executed again (the answers, the
	// state, the effects or the sinks counted another execution): the keys are not honoured.
	twice bool
	// Scenario is what ran (nil when the check was skipped before building one).
	Scenario *scenariogen.Spec `json:"-"`
	// plan is how the battery ran it.
	plan *rig.Plan
	// again, when set, says that the trial judged nothing because its first call was not in
	// flight at the server, and how long another trial waits before giving up on it.
	again time.Duration
	// unproven, set with again, says that the evidence counted one execution but nothing
	// showed the first call in flight: the next trial gives up later, well into the execution,
	// where the retry's timing can show it.
	unproven bool
}

// UnmarshalJSON reads a cell of a JSON report back (report merge): a report written before cells
// carried evidence_items has its evidence as text only, read back into the list.
func (c *Cell) UnmarshalJSON(b []byte) error {
	type plain Cell // without this method
	if err := json.Unmarshal(b, (*plain)(c)); err != nil {
		return err
	}
	if len(c.Evidence) == 0 && c.EvidenceText != "" {
		c.Evidence = matrix.ParseEvidences(c.EvidenceText)
	}
	return nil
}

// ByStatusOnly reports that the status code alone decided the cell: for replay and
// lost-response, a retry refused rather than executed or answered.
func (c *Cell) ByStatusOnly() bool { return c.Evidence.Only(matrix.EvidenceStatus) }

// ReplaysDiffer reports that a marked replay differed from the stored answer in this check.
func (c *Cell) ReplaysDiffer() bool { return c.replaysDiffer }

// CountedExtra reports that evidence which counts executions (the effects, the sinks or the
// state) decided the cell ✗: more executions happened than the check allows, whatever the
// answers look like.
func (c *Cell) CountedExtra() bool {
	if c.Status != matrix.Fail {
		return false
	}
	for _, e := range c.Evidence {
		switch e.Kind {
		case matrix.EvidenceEffects, matrix.EvidenceSinks, matrix.EvidenceState:
			return true
		}
	}
	return false
}

// byAnswers is a cell the exactly-once verdict decided.
func byAnswers() matrix.Evidences { return matrix.Evidences{{Kind: matrix.EvidenceAnswers}} }

// byStatus is a cell the status code of a call that had to be refused decided.
func byStatus() matrix.Evidences { return matrix.Evidences{{Kind: matrix.EvidenceStatus}} }

// effects is the declared effects' count of executions.
var effects = matrix.Evidence{Kind: matrix.EvidenceEffects}

// overruledAnswers are answers that differed while the state showed one execution.
var overruledAnswers = matrix.Evidence{Kind: matrix.EvidenceAnswers, Overruled: true}

// state is what the read-only tools named showed.
func state(tools []string) matrix.Evidence {
	return matrix.Evidence{Kind: matrix.EvidenceState, Names: slices.Clone(tools)}
}

// sinks is what the sinks named heard.
func sinks(names []string) matrix.Evidence {
	return matrix.Evidence{Kind: matrix.EvidenceSinks, Names: slices.Clone(names)}
}

// Profiles name the status codes a check expects.
var Profiles = []string{"ietf", "stripe", "lenient"}

// Profile is what a profile expects of a rejected call, by situation.
type Profile struct {
	Name                      string
	Missing, Mismatch, Flight int // 0: any 4xx
	// RefusedForever is the cell of a retry after completion that is refused (409, in progress)
	// on every attempt: the agent never learns the outcome. ✗ under ietf and stripe, whose
	// retry after completion gets the stored result; ⚠ under lenient.
	RefusedForever matrix.Status
}

// ProfileOf is the profile of a name ("" is ietf).
func ProfileOf(name string) (Profile, error) {
	switch name {
	case "", "ietf":
		return Profile{"ietf", 400, 422, 409, matrix.Fail}, nil
	case "stripe":
		return Profile{"stripe", 400, 400, 409, matrix.Fail}, nil
	case "lenient":
		return Profile{Name: "lenient", RefusedForever: matrix.Warn}, nil
	}
	return Profile{}, fmt.Errorf("unknown profile %q: use ietf, stripe or lenient", name)
}

// ExecutedAgain reports that the check showed a call with a used key execute again (the answers,
// the state, the effects or the sinks counted another execution): the keys were not honoured.
func (c *Cell) ExecutedAgain() bool { return c.twice }

// Spread says what the trial that decided the cell showed of a key's calls over several
// instances of the endpoint: again, that calls of one key executed on two instances or more;
// deduped, that calls of one key that reached the same instance executed there once (the
// others replayed, were refused, or answered alike). Both false for one instance.
func (c *Cell) Spread() (again, deduped bool) {
	if c.plan == nil || c.plan.Last == nil {
		return false, false
	}
	tr := explain.Trial(c.plan.Last)
	if tr == nil {
		return false, false
	}
	type at struct {
		key   string
		index int
	}
	calls := map[at][]result.Call{}
	executedOn := map[string]map[int]bool{}
	for _, call := range tr.Calls {
		if call.Instance == nil || call.Key == "" {
			continue
		}
		k := at{call.Key, call.Instance.Index}
		calls[k] = append(calls[k], call)
		if (call.Outcome == outcome.OK && !call.Replayed) || call.Discarded == outcome.OK {
			if executedOn[call.Key] == nil {
				executedOn[call.Key] = map[int]bool{}
			}
			executedOn[call.Key][call.Instance.Index] = true
		}
	}
	for _, on := range executedOn {
		again = again || len(on) > 1
	}
	for _, cs := range calls {
		if len(cs) < 2 {
			continue
		}
		var answers []any
		one := true
		for _, call := range cs {
			if call.Outcome != outcome.OK || call.Replayed {
				continue
			}
			for _, a := range answers {
				one = one && jsonvalue.Equal(a, call.Result)
			}
			answers = append(answers, call.Result)
		}
		deduped = deduped || (one && len(answers) > 0)
	}
	return again && c.twice, deduped
}
