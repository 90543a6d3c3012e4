package battery

import (
	"fmt"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/check/synth"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// payloadMismatch: the same key again with another payload must be rejected, neither executed
// nor replayed.
func (b *Battery) payloadMismatch(t toolset.ToolInfo, args map[string]any) *Cell {
	if t.Natural {
		return b.keyless(PayloadMismatch)
	}
	other, field, ok := synth.Vary(args)
	if !ok {
		return &Cell{Check: PayloadMismatch, Status: matrix.Skip, Reason: "no argument to vary"}
	}
	reuse := call(t, "reuse", other)
	reuse.Key, reuse.Expect = "{{ first.key }}", "any"
	steps := append(b.Snap.Steps(call(t, "first", args), reuse), scenariogen.Step{Assert: "!reuse.ok"})
	s := b.NewPlan(t, PayloadMismatch, "the same key with another payload is rejected", append(steps, b.Snap.Unchanged(1)...)...)
	s.Comment = fmt.Sprintf("The same key again with another %s: rejected, neither executed nor replayed.", field)
	s.Executions = 1
	return b.mismatch(s, t, other)
}

// mismatch judges the reuse of a key with another payload.
func (b *Battery) mismatch(s *rig.Plan, t toolset.ToolInfo, other map[string]any) *Cell {
	j, done := b.judge(s, "first", "reuse")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		if c.Status == matrix.Fail && res != nil {
			if rs := explain.Calls(explain.Trial(res), "reuse"); len(rs) > 0 && rs[0].Outcome == outcome.OK {
				c.Reason = "another payload under a used key executed" + explain.StatusNote(rs[0])
			}
		}
		return c
	}
	if r.Outcome == outcome.OK {
		c.Status, c.Evidence = matrix.Fail, byAnswers()
		c.Reason = "another payload under a used key executed" + explain.StatusNote(r)
		if r.Replayed || res.Metrics.Replayed > 0 {
			c.Reason = "another payload under a used key got the first call's stored answer (a replay)"
		}
	} else {
		b.rejected(c, r, b.prof.Mismatch, "another payload under a used key")
		if !b.executedAnyway(c, r, tr, 1, "another payload under a used key") {
			b.inconclusiveControl(c, t, other, "another payload under a used key")
		}
	}
	if c.Status != matrix.Pass {
		c.Details = details(res, tr)
	}
	return c
}
