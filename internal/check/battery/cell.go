package battery

import (
	"fmt"
	"time"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/scenariogen"
)

// Cell is one check of one tool.
type Cell struct {
	Check  string        `json:"check"`
	Status matrix.Status `json:"status"`
	// Reason is one line: why the cell is what it is.
	Reason string `json:"reason,omitempty"`
	// Evidence names what decided: "answers" (the exactly-once verdict, DESIGN §8), "status".
	Evidence string `json:"evidence,omitempty"`
	// Details explain a cell that is not ✓: the failure and the call history.
	Details []string `json:"details,omitempty"`
	// Rounds, Overlapped and the spread describe the concurrent check.
	Rounds      int     `json:"rounds,omitempty"`
	Overlapped  int     `json:"overlapped,omitempty"`
	SpreadP50US float64 `json:"spread_p50_us,omitempty"`
	SpreadMaxUS float64 `json:"spread_max_us,omitempty"`
	// Replayed reports that the server replayed a stored answer in this check.
	Replayed bool          `json:"replayed,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// replaysDiffer is set when a marked replay differed from the stored answer.
	replaysDiffer bool
	// Scenario is what ran (nil when the check was skipped before building one).
	Scenario *scenariogen.Spec `json:"-"`
	// plan is how the battery ran it.
	plan *rig.Plan
	// again, when set, says that the trial judged nothing because its first call was not in
	// flight at the server, and how long another trial waits before giving up on it.
	again time.Duration
}

// ByStatusOnly reports that the status code alone decided the cell: for replay and
// lost-response, a retry refused rather than executed or answered.
func (c *Cell) ByStatusOnly() bool { return c.Evidence == byStatus }

// ReplaysDiffer reports that a marked replay differed from the stored answer in this check.
func (c *Cell) ReplaysDiffer() bool { return c.replaysDiffer }

// evidence names what decided a cell.
const (
	byAnswers = "answers (exactly-once verdict)"
	byStatus  = "status code"
	bySinks   = "sinks"
	byEffects = "effects"
)

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
