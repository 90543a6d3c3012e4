package battery

import (
	"fmt"
	"strings"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenariogen"
)

// newCell is the cell plan s decides.
func newCell(s *rig.Plan) *Cell { return &Cell{Check: s.Check, Scenario: s.Spec, plan: s} }

// outcome runs a spec and returns the cell for the cases every check treats alike: it could
// not run, the exactly-once verdict failed, or the first call (which must work) did not.
func (b *Battery) outcome(s *rig.Plan, first string) (*result.ScenarioResult, *Cell) {
	c := newCell(s)
	res, err := b.Exec(s)
	if err != nil {
		c.Status, c.Reason = matrix.Inconclusive, "could not run: "+err.Error()
		return nil, c
	}
	trial := explain.Trial(res)
	c.Replayed = res.Metrics.Replayed > 0
	c.replaysDiffer = res.Metrics.ReplaysDiffer > 0
	switch {
	case res.Status == result.Errored || res.Status == result.Skipped:
		c.Status, c.Reason = matrix.Inconclusive, "could not run"
		if res.Failure != nil {
			c.Reason += ": " + res.Failure.Message
		}
	case res.Metrics.DuplicateExecutions > 0 || res.Metrics.ReplaysDiffer > 0 || (res.Failure != nil && res.Failure.Kind == result.FailVerdict && !noID(res)):
		c.Status, c.Evidence = matrix.Fail, byAnswers()
		c.twice = res.Metrics.DuplicateExecutions > 0
		c.Reason = fmt.Sprintf("%d duplicate execution(s)", res.Metrics.DuplicateExecutions)
		if res.Metrics.DuplicateExecutions == 0 {
			c.Reason = "a replay differs from the stored answer"
		} else {
			c.Reason += onInstances(trial)
		}
	case res.Failure != nil && res.Failure.Kind == result.FailExpect && res.Failure.Step == first:
		c.Status = matrix.Inconclusive
		c.Reason = "the first call did not succeed, so there is nothing to retry: " + res.Failure.Message + b.twice(s, first)
	default:
		return res, nil
	}
	c.Details = details(res, trial)
	return res, c
}

// onInstances says where a trial's executed calls went when they reached several instances of
// the endpoint (": lost on instance 1, retry on instance 2"); "" for one instance.
func onInstances(t *result.Trial) string {
	if t == nil {
		return ""
	}
	var parts []string
	seen := map[int]bool{}
	for _, c := range t.Calls {
		executed := (c.Outcome == outcome.OK && !c.Replayed) || c.Discarded == outcome.OK
		if c.Instance == nil || !executed {
			continue
		}
		seen[c.Instance.Index] = true
		if len(parts) < 4 {
			parts = append(parts, fmt.Sprintf("%s on instance %d", c.Step, c.Instance.Index))
		}
	}
	if len(seen) < 2 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

// noID reports that the verdict could not judge a run from its answers alone: equal answers
// without an id prove no replay, so the check's own state comparison decides.
func noID(res *result.ScenarioResult) bool {
	return res.Metrics.NoID() > 0 && res.Metrics.DuplicateExecutions == 0 && res.Metrics.ReplaysDiffer == 0
}

// noIDReason is why a check whose answers carry no id is inconclusive.
const noIDReason = "the answers carry no id, so equal answers prove no replay, and no read-only tool showed the state"

// noIDComment is what a saved spec says when the state decides because the answers carry no id.
const noIDComment = " Its answers carry no id, so equal answers prove no replay: the state decides (verdict: off)."

// judging is a spec's run, ready to be judged from one step's first call.
type judging struct {
	res  *result.ScenarioResult
	tr   *result.Trial
	call result.Call
	cell *Cell
}

// judge runs a spec; done is true when the cell is already decided (it could not run, the
// verdict failed, the first call failed, or step was never sent).
func (b *Battery) judge(s *rig.Plan, first, step string) (j judging, done bool) {
	res, c := b.outcome(s, first)
	if c != nil {
		return judging{res: res, cell: c}, true
	}
	j = judging{res: res, tr: explain.Trial(res), cell: newCell(s)}
	rs := explain.Calls(j.tr, step)
	if len(rs) == 0 {
		j.cell.Status, j.cell.Reason = matrix.Inconclusive, "the "+step+" call was not sent"
		return j, true
	}
	j.call = rs[len(rs)-1]
	return j, false
}

// firstFailed reports whether the step's call failed, its discarded answer included.
func firstFailed(t *result.Trial, step string) bool {
	rs := explain.Calls(t, step)
	return len(rs) > 0 && (rs[0].Outcome == outcome.Fail || rs[0].Discarded == outcome.Fail)
}

// insertAt puts extra steps just before (after: just after) the step with the given id.
func insertAt(steps []scenariogen.Step, id string, after bool, extra ...scenariogen.Step) []scenariogen.Step {
	for i, s := range steps {
		if s.ID == id {
			if after {
				i++
			}
			return append(append(append([]scenariogen.Step(nil), steps[:i]...), extra...), steps[i:]...)
		}
	}
	return steps
}

// maxHistory bounds the calls shown under a cell.
const maxHistory = 12

// details explains a cell: the runner's failure and the trial's calls.
func details(res *result.ScenarioResult, t *result.Trial) []string {
	return explain.Details(res, t, maxHistory)
}
