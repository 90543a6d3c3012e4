package battery

import (
	"fmt"

	"github.com/idemtest/idemtest/internal/check/synth"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// errorsNotReplayed sends a call the server must refuse (a required argument left out), then
// the corrected call with the same key: an error is not an outcome to store, so the corrected
// call must execute.
func (b *Battery) errorsNotReplayed(t toolset.ToolInfo, args map[string]any) *Cell {
	if t.Natural {
		return b.keyless(ErrorsNotReplayed)
	}
	bad, field, ok := synth.Broken(t.InputSchema, b.Def.Key.Arg, args)
	if !ok {
		return &Cell{Check: ErrorsNotReplayed, Status: matrix.Skip, Reason: "no required argument to leave out, so no refused call to retry"}
	}
	s := b.NewPlan(t, ErrorsNotReplayed, "a refused call does not bind its key: the corrected retry executes",
		scenariogen.Step{ID: "broken", CallTool: t.Name, Args: bad, Expect: "any"},
		scenariogen.Step{ID: "retry", RetryOf: "broken", Args: args, Expect: "any"},
		scenariogen.Step{Assert: "broken.ok || (retry.ok && !retry.replayed)"})
	s.Comment = fmt.Sprintf("A call without %s, which the server refuses, then the corrected call with the same key: nothing executed, so nothing may be stored under the key, and the corrected call must execute.", field)
	s.Executions = 1
	// A broken call the server accepts executed, and the effects expression may not see it (it
	// filters by the argument left out): the executions are then not counted.
	s.CountUnless = "broken.ok"
	j, done := b.judge(s, "", "retry")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		return c
	}
	c.Evidence = byAnswers()
	br := explain.Calls(tr, "broken")
	if len(br) == 0 || br[0].Outcome != outcome.Fail {
		// No refused call: what the effects and sinks counted is no evidence about this check.
		s.EffectsLines, s.SinkNames, s.SinkLines = nil, nil, nil
	}
	switch {
	case len(br) == 0:
		c.Status, c.Reason = matrix.Inconclusive, "the call without "+field+" was not sent"
	case br[0].Outcome == outcome.OK:
		c.Status, c.Reason = matrix.Inconclusive, "the call without "+field+" succeeded, so there was no refused call to retry"+explain.StatusNote(br[0])
		if s.Effects != "" || s.SinksAsserted {
			c.Reason += " (the declared effects and the sinks are not counted: that call executed, and an effects expression that filters by " + field + " cannot see it)"
		}
	case br[0].Outcome == outcome.Info:
		c.Status, c.Reason = matrix.Inconclusive, "the outcome of the call without "+field+" is unknown"+explain.StatusNote(br[0])
	case r.Outcome == outcome.OK && r.Replayed:
		c.Status, c.Reason = matrix.Fail, "the corrected call with the key of a refused call got a replay, not an execution"
	case r.Outcome == outcome.OK:
		c.Status, c.Reason = matrix.Pass, "refused without "+field+explain.StatusNote(br[0])+"; the corrected call with the same key executed"
	case r.Outcome == outcome.Info:
		c.Status, c.Reason = matrix.Inconclusive, "the corrected call's outcome is unknown"+explain.StatusNote(r)
	case r.Status == br[0].Status && jsonvalue.Equal(r.Result, br[0].Result):
		c.Status, c.Evidence = matrix.Fail, byStatus()
		c.Reason = "the corrected call got the refused call's error again" + explain.StatusNote(r) + ": the error was stored under the key"
	default:
		c.Status, c.Evidence = matrix.Fail, byStatus()
		c.Reason = "the corrected call with the key of a refused call was refused" + explain.StatusNote(r) + ": the key stayed bound to the call that never executed"
	}
	if c.Status == matrix.Fail && r.Outcome == outcome.Fail {
		// A tool that refuses the corrected arguments with any key says nothing about keys.
		if ok, why := b.Control(t, args); !ok {
			c.Status, c.Evidence = matrix.Inconclusive, byStatus()
			c.Reason = "the corrected call was refused" + explain.StatusNote(r) + ", but so is a call with a fresh key" + why + ": the refusal is not about the key"
		}
	}
	if c.Status != matrix.Pass {
		c.Details = details(res, tr)
	}
	return c
}
