package battery

import (
	"strings"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/check/synth"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// distinctKeys: two calls with the same arguments and two keys are two operations; a server
// that dedupes on the payload instead of the key swallows the second.
func (b *Battery) distinctKeys(t toolset.ToolInfo, args map[string]any) *Cell {
	if t.Natural {
		return b.keyless(DistinctKeys)
	}
	if b.keys != nil && b.keys.ignored {
		// Two executions for two keys are what a server that ignores keys does anyway.
		return b.keys.cell(DistinctKeys)
	}
	steps := append(b.Snap.Steps(call(t, "first", args), scenariogen.Step{ID: "second", CallTool: t.Name, Args: args, Expect: "any"}),
		scenariogen.Step{Assert: "second.ok && !second.replayed"},
		scenariogen.Step{Assert: "toJSON(first.result) != toJSON(second.result)"})
	s := b.NewPlan(t, DistinctKeys, "two keys with the same payload are two operations", steps...)
	s.Comment = "Two calls with the same arguments and two keys are two operations: a server that dedupes on the payload instead of the key swallows the second."
	s.Executions = 2
	return b.distinct(s, t, args)
}

// distinct judges the second key's call.
func (b *Battery) distinct(s *rig.Plan, t toolset.ToolInfo, args map[string]any) *Cell {
	j, done := b.judge(s, "first", "second")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		return c
	}
	c.Evidence = byAnswers()
	f := res.Failure
	switch {
	case r.Outcome == outcome.Info:
		c.Status, c.Reason = matrix.Inconclusive, "the second call's outcome is unknown"+explain.StatusNote(r)
	case r.Outcome == outcome.Fail:
		c.Status, c.Reason = matrix.Fail, "a new key with the same arguments was refused"+explain.StatusNote(r)+": the server dedupes on the payload, not the key"
	case r.Replayed:
		c.Status, c.Reason = matrix.Fail, "a new key with the same arguments got a replay: the server dedupes on the payload, not the key"
	case f != nil && f.Kind == result.FailAssert:
		c.Status, c.Reason = matrix.Inconclusive, "both answers are equal and neither is marked as a replay: two executions and a dedupe on the payload look the same in the answers"
	default:
		c.Status, c.Reason = matrix.Pass, "two keys, two executions"
	}
	b.distinctEvidence(c, tr, t, args)
	if c.Status == matrix.Pass {
		// Two executions for two keys say something only of keys that work: a server that
		// ignores them executes every call.
		if p := b.keysWork(t, args); p.ignored {
			c = p.cell(DistinctKeys)
			return c
		} else if !p.work {
			c.Status, c.Reason = matrix.Inconclusive, "two keys, two executions, but "+p.cell(DistinctKeys).Reason
		}
	}
	if c.Status != matrix.Pass {
		c.Details = details(res, tr)
	}
	return c
}

// distinctEvidence revises a distinct-keys cell with what else is known: a second call that
// changed nothing though the first did (the server deduplicates by content), or a refusal that a
// call with other arguments gets too (it is not about the payload).
func (b *Battery) distinctEvidence(c *Cell, tr *result.Trial, t toolset.ToolInfo, args map[string]any) {
	switch c.Status {
	case matrix.Pass:
		moved, same := b.Snap.Same(tr)
		if _, ok := b.Snap.Minted(tr, "first", "second"); same && !ok {
			c.Status, c.Evidence = matrix.Warn, matrix.Evidences{state(moved)}
			c.Reason = "the second key's call left " + strings.Join(moved, ", ") + " as the first call left it: one payload, one state whatever the keys (idempotent by nature, or the server deduplicates by content)"
		}
	case matrix.Fail:
		other, _, ok := synth.Vary(args)
		if !ok {
			return
		}
		if works, why := b.Control(t, other); !works {
			c.Status = matrix.Inconclusive
			c.Reason = "a new key with the same arguments was refused, but so is a call with other arguments" + why + ": the refusal is not a dedupe on the payload"
		}
	}
}
