package battery

import (
	"fmt"

	"github.com/idemtest/idemtest/internal/check/spec"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
)

// plan is a spec as the battery runs it: the scenario, and what the battery counts and learns
// about it beyond what is written.
type plan struct {
	*spec.Spec
	// executions is how many times the tool must execute in one trial (-1: not counted), for
	// the sinks' evidence.
	executions int
	// sinksAsserted is set once the sink counts were added as assertions.
	sinksAsserted bool
	// sinkNames and sinkLines say which sinks heard more or less than the executions send, in
	// the last run.
	sinkNames, sinkLines []string
	// effects is the effects assertion added (""), effectsLines why it failed in a run, last
	// the last run's result.
	effects      string
	effectsLines []string
	last         *runner.ScenarioResult
	// needsEvidence marks an inconclusive cell that the declared effects can decide.
	needsEvidence bool
}

// newCell is the cell the plan decides.
func (s *plan) newCell() *Cell { return &Cell{Check: s.Check, Scenario: s.Spec, plan: s} }

func (b *Battery) spec(t runner.ToolInfo, check, name string, steps ...spec.Step) *plan {
	return &plan{Spec: &spec.Spec{Name: t.Name + ": " + name, Tags: []string{"check", check}, Endpoint: b.def.Name, Tool: t.Name, Check: check, Steps: steps}, executions: -1}
}

// exec runs one spec once through the runner.
func (b *Battery) exec(s *plan) (*runner.ScenarioResult, error) {
	if b.perCall != nil && s.executions >= 0 && !s.sinksAsserted {
		s.Steps = append(s.Steps, b.sinkAsserts(s.executions)...)
		s.sinksAsserted = true
	}
	b.beforeRun(s)
	sc, err := s.Scenario(b.base)
	if err != nil {
		return nil, err
	}
	rep := b.env.Run(b.ctx, []*scenario.Scenario{sc}, runner.Options{})
	if rep.Err != nil {
		return nil, rep.Err
	}
	s.sinkNames, s.sinkLines = b.sinkCheck(s)
	if len(rep.Scenarios) == 0 {
		return nil, fmt.Errorf("nothing ran")
	}
	b.afterRun(s, rep.Scenarios[0])
	return rep.Scenarios[0], nil
}

// outcome runs a spec and returns the cell for the cases every check treats alike: it could
// not run, the exactly-once verdict failed, or the first call (which must work) did not.
func (b *Battery) outcome(s *plan, first string) (*runner.ScenarioResult, *Cell) {
	c := s.newCell()
	res, err := b.exec(s)
	if err != nil {
		c.Status, c.Reason = Inconclusive, "could not run: "+err.Error()
		return nil, c
	}
	trial := res.FailedTrial
	if trial == nil {
		trial = res.Trial1
	}
	c.Replayed = res.Metrics.Replayed > 0
	c.replaysDiffer = res.Metrics.ReplaysDiffer > 0
	switch {
	case res.Status == runner.Errored || res.Status == runner.Skipped:
		c.Status, c.Reason = Inconclusive, "could not run"
		if res.Failure != nil {
			c.Reason += ": " + res.Failure.Message
		}
	case res.Metrics.DuplicateExecutions > 0 || res.Metrics.ReplaysDiffer > 0 || (res.Failure != nil && res.Failure.Kind == "verdict" && !noID(res)):
		c.Status, c.Evidence = Fail, byAnswers
		c.Reason = fmt.Sprintf("%d duplicate execution(s)", res.Metrics.DuplicateExecutions)
		if res.Metrics.DuplicateExecutions == 0 {
			c.Reason = "a replay differs from the stored answer"
		}
	case res.Failure != nil && res.Failure.Kind == "expect" && res.Failure.Step == first:
		c.Status = Inconclusive
		c.Reason = "the first call did not succeed, so there is nothing to retry: " + res.Failure.Message + b.twice(s, first)
	default:
		return res, nil
	}
	c.Details = details(res, trial)
	return res, c
}

// noID reports that the verdict could not judge a run from its answers alone: equal answers
// without an id prove no replay, so the check's own state comparison decides.
func noID(res *runner.ScenarioResult) bool {
	return res.Metrics.NoID() > 0 && res.Metrics.DuplicateExecutions == 0 && res.Metrics.ReplaysDiffer == 0
}

// noIDReason is why a check whose answers carry no id is inconclusive.
const noIDReason = "the answers carry no id, so equal answers prove no replay, and no read-only tool showed the state"

// noIDComment is what a saved spec says when the state decides because the answers carry no id.
const noIDComment = " Its answers carry no id, so equal answers prove no replay: the state decides (verdict: off)."

// judging is a spec's run, ready to be judged from one step's first call.
type judging struct {
	res  *runner.ScenarioResult
	tr   *runner.Trial
	call runner.Call
	cell *Cell
}

// judge runs a spec; done is true when the cell is already decided (it could not run, the
// verdict failed, the first call failed, or step was never sent).
func (b *Battery) judge(s *plan, first, step string) (j judging, done bool) {
	res, c := b.outcome(s, first)
	if c != nil {
		return judging{res: res, cell: c}, true
	}
	j = judging{res: res, tr: trialOf(res), cell: s.newCell()}
	rs := calls(j.tr, step)
	if len(rs) == 0 {
		j.cell.Status, j.cell.Reason = Inconclusive, "the "+step+" call was not sent"
		return j, true
	}
	j.call = rs[len(rs)-1]
	return j, false
}

// calls returns the calls of a step in the trial.
func calls(t *runner.Trial, step string) []runner.Call {
	if t == nil {
		return nil
	}
	var out []runner.Call
	for _, c := range t.Calls {
		if c.Step == step {
			out = append(out, c)
		}
	}
	return out
}

// trialOf is the trial a cell shows: the failed one, else the first (nil without a result).
func trialOf(res *runner.ScenarioResult) *runner.Trial {
	if res == nil {
		return nil
	}
	if res.FailedTrial != nil {
		return res.FailedTrial
	}
	return res.Trial1
}

func statusNote(r runner.Call) string {
	switch {
	case r.Status != 0 && r.Error != "":
		return fmt.Sprintf(" (status %d: %s)", r.Status, r.Error)
	case r.Status != 0:
		return fmt.Sprintf(" (status %d)", r.Status)
	case r.Error != "":
		return " (" + r.Error + ")"
	}
	return ""
}

// firstFailed reports whether the step's call failed, its discarded answer included.
func firstFailed(t *runner.Trial, step string) bool {
	rs := calls(t, step)
	return len(rs) > 0 && (rs[0].Outcome == scenario.Fail || rs[0].Discarded == scenario.Fail)
}

// insertAt puts extra steps just before (after: just after) the step with the given id.
func insertAt(steps []spec.Step, id string, after bool, extra ...spec.Step) []spec.Step {
	for i, s := range steps {
		if s.ID == id {
			if after {
				i++
			}
			return append(append(append([]spec.Step(nil), steps[:i]...), extra...), steps[i:]...)
		}
	}
	return steps
}
