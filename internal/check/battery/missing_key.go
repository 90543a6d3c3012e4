package battery

import (
	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// missingKey: a mutating call without an idempotency key, per check.missing_key: reject expects
// a refusal and no effect, accept reports.
func (b *Battery) missingKey(t toolset.ToolInfo, args map[string]any) *Cell {
	if t.Natural {
		return b.keyless(MissingKey)
	}
	nokey := call(t, "nokey", args)
	nokey.WithoutKey, nokey.Expect = true, "any"
	steps := b.Snap.AroundOne(nokey)
	if b.Config.MissingKey != "accept" {
		steps = append(append(steps, scenariogen.Step{Assert: "!nokey.ok"}), b.Snap.Unchanged(0)...)
	}
	s := b.NewPlan(t, MissingKey, "a call without a key is rejected", steps...)
	s.Comment = "A mutating call without an idempotency key (check.missing_key: " + b.Config.MissingKey + ")."
	s.Executions = 0
	if b.Config.MissingKey == "accept" {
		s.Executions = -1
	}
	return b.missing(s, t, args)
}

// missing judges the call without a key.
func (b *Battery) missing(s *rig.Plan, t toolset.ToolInfo, args map[string]any) *Cell {
	j, done := b.judge(s, "", "nokey")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		return c
	}
	switch {
	case r.Outcome == outcome.OK && b.Config.MissingKey == "accept":
		c.Status, c.Evidence, c.Reason = matrix.Pass, byStatus(), "accepted without a key (check.missing_key: accept)"
	case r.Outcome == outcome.OK:
		c.Status, c.Evidence = matrix.Fail, byStatus()
		c.Reason = "a call without a key executed" + explain.StatusNote(r) + ": the server does not require keys (set check.missing_key: accept if that is intended)"
	default:
		b.rejected(c, r, b.prof.Missing, "a call without a key")
		if !b.executedAnyway(c, r, tr, 0, "a call without a key") {
			b.inconclusiveControl(c, t, args, "a call without a key")
		}
	}
	if c.Status != matrix.Pass {
		c.Details = details(res, tr)
	}
	return c
}
