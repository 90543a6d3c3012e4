package battery

import (
	"fmt"

	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// keyScope sends the key of a call to another tool: that tool must execute its own call, and
// the first tool's retry must still get its own answer.
func (b *Battery) keyScope(t toolset.ToolInfo, args map[string]any) *Cell {
	if t.Natural {
		return b.keyless(KeyScope)
	}
	u, uargs, ok := b.Partner(t)
	if !ok {
		return &Cell{Check: KeyScope, Status: matrix.Skip, Reason: "no other mutating tool that works with its arguments to send the same key to (--skip-tool and check.tools.NAME.skip leave tools out)"}
	}
	if p := b.keysWork(t, args); !p.work {
		return p.cell(KeyScope)
	}
	other := scenariogen.Step{ID: "other", CallTool: u.Name, Args: uargs, Key: "{{ first.key }}", Expect: "any"}
	s := b.NewPlan(t, KeyScope, "one key on "+t.Name+" and "+u.Name+": each executes its own call",
		scenariogen.Step{ID: "first", CallTool: t.Name, Args: args}, other,
		// Whether the retry executes again is replay's business; here only whose answer it gets.
		scenariogen.Step{ID: "again", RetryOf: "first", Expect: "any", Verdict: "off"},
		scenariogen.Step{Assert: "!other.ok || (!other.replayed && toJSON(other.result) != toJSON(first.result))"},
		scenariogen.Step{Assert: "!again.ok || toJSON(again.result) != toJSON(other.result) || toJSON(again.result) == toJSON(first.result)"})
	s.Comment = fmt.Sprintf("Keys are scoped per tool: the key of the %s call sent with a %s call is another operation, and the retry of the first still gets its own answer.", t.Name, u.Name)
	// Two tools execute: the sinks and effects of one tool do not count them.
	s.Executions = -1
	j, done := b.judge(s, "first", "other")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		if c.Status == matrix.Fail && res != nil {
			if a, o := explain.Calls(explain.Trial(res), "again"), explain.Calls(explain.Trial(res), "other"); len(a) > 0 && len(o) > 0 && a[0].Outcome == outcome.OK && jsonvalue.Equal(a[0].Result, o[0].Result) {
				c.Reason = "the retry of " + t.Name + " got the answer of " + u.Name + ": keys are shared between tools"
			}
		}
		return c
	}
	c.Evidence = byAnswers()
	first := explain.Calls(tr, "first")
	again := explain.Calls(tr, "again")
	switch {
	case r.Outcome == outcome.OK && (r.Replayed || (len(first) > 0 && jsonvalue.Equal(r.Result, first[0].Result))):
		c.Status = matrix.Fail
		c.Reason = u.Name + " with the key of the " + t.Name + " call got " + t.Name + "'s answer: keys are not scoped per tool, so " + u.Name + " never ran"
	case len(again) > 0 && len(first) > 0 && again[0].Outcome == outcome.OK && jsonvalue.Equal(again[0].Result, r.Result) && !jsonvalue.Equal(again[0].Result, first[0].Result):
		c.Status = matrix.Fail
		c.Reason = "the retry of " + t.Name + " got the answer of " + u.Name + ": keys are shared between tools"
	case r.Outcome == outcome.Info:
		c.Status, c.Reason = matrix.Inconclusive, u.Name+"'s outcome is unknown"+explain.StatusNote(r)
	case r.Outcome == outcome.Fail:
		if ok, why := b.Control(u, uargs); !ok {
			c.Status = matrix.Inconclusive
			c.Reason = u.Name + " refused the key of the " + t.Name + " call" + explain.StatusNote(r) + ", but it refuses a call with a fresh key too" + why + ": give it working arguments under check: {tools: {" + u.Name + ": {args: …}}}"
			break
		}
		c.Status, c.Evidence = matrix.Warn, byStatus()
		c.Reason = u.Name + " refused the key of the " + t.Name + " call" + explain.StatusNote(r) + ": keys are not scoped per tool (safe, but the agent's call cannot run)"
	default:
		c.Status, c.Reason = matrix.Pass, u.Name+" with the same key executed its own call"
	}
	if c.Status != matrix.Pass {
		c.Details = details(res, tr)
	}
	return c
}
