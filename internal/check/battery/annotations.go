package battery

import (
	"strings"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// annotations checks what an MCP tool's annotations promise: an idempotentHint tool called twice
// without a key changes the state once; a readOnlyHint tool changes nothing.
func (b *Battery) annotations(t toolset.ToolInfo, args map[string]any) *Cell {
	switch {
	case b.Def.MCP == nil:
		return &Cell{Check: Annotations, Status: matrix.Skip, Reason: "plain HTTP tools carry no annotations"}
	case t.ReadOnly:
		return b.readOnly(t, call(t, "call", args))
	case !t.Idempotent:
		return &Cell{Check: Annotations, Status: matrix.Skip, Reason: "no idempotentHint to check"}
	}
	first := call(t, "first", args)
	// Written out: without_key alone would default to expect: fail.
	first.WithoutKey, first.Expect = true, "ok"
	second := call(t, "second", args)
	second.WithoutKey, second.Expect = true, "any"
	s := b.NewPlan(t, Annotations, "idempotentHint: the same call twice without a key changes the state once", b.Snap.WithState(first, second)...)
	s.Comment = "The tool is annotated idempotentHint: calling it twice with the same arguments and no key must leave the state as one call does."
	return b.idempotentHint(s)
}

// idempotentHint judges an idempotentHint tool called twice without a key: only the state can
// tell.
func (b *Battery) idempotentHint(s *rig.Plan) *Cell {
	j, done := b.judge(s, "first", "second")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		return c
	}
	moved, changed := b.Snap.Compare(tr)
	byState := matrix.Evidences{state(moved)}
	switch {
	case len(changed) > 0:
		c.Status, c.Evidence = matrix.Fail, byState
		c.Reason = "annotated idempotentHint, yet the same call again changed " + strings.Join(changed, ", ") + " again"
	case r.Outcome == outcome.Info:
		c.Status, c.Reason = matrix.Inconclusive, "the second call's outcome is unknown"+explain.StatusNote(r)
	case r.Outcome == outcome.Fail:
		c.Status, c.Evidence = matrix.Warn, byStatus()
		c.Reason = "annotated idempotentHint, yet the same call again was refused" + explain.StatusNote(r)
	case len(moved) > 0:
		c.Status, c.Evidence = matrix.Pass, byState
		c.Reason = "the same call again left " + strings.Join(moved, ", ") + " as one call left it"
	default:
		c.Status, c.Reason = matrix.Inconclusive, "both calls succeeded, and no read-only tool showed the effect"
	}
	if c.Status != matrix.Pass {
		c.Details = append(b.Snap.Details(tr, changed), details(res, tr)...)
	}
	return c
}

// readOnly judges a tool annotated readOnlyHint that is checked as mutating: one call must leave
// every snapshot tool's answer as it was.
func (b *Battery) readOnly(t toolset.ToolInfo, call scenariogen.Step) *Cell {
	s := b.NewPlan(t, Annotations, "readOnlyHint: a call changes nothing", b.Snap.AroundOne(call)...)
	s.Comment = "The tool is annotated readOnlyHint: a call must leave the state as it was."
	j, done := b.judge(s, call.ID, call.ID)
	c, res, tr := j.cell, j.res, j.tr
	if done {
		return c
	}
	if len(b.Snap.Tools) == 0 {
		c.Status, c.Reason = matrix.Inconclusive, "annotated readOnlyHint, and no read-only tool without required arguments can show the state"
		return c
	}
	changed, unread := b.Snap.ChangedAt(tr, 0)
	if len(unread) > 0 {
		c.Status, c.Reason = matrix.Inconclusive, "could not read "+unread[0]+" before and after the call"
		return c
	}
	c.Evidence = matrix.Evidences{state(b.Snap.Tools)}
	if len(changed) > 0 {
		c.Status = matrix.Fail
		c.Reason = "annotated readOnlyHint, yet one call changed " + strings.Join(changed, ", ")
		c.Details = details(res, tr)
		return c
	}
	c.Status, c.Reason = matrix.Pass, "annotated readOnlyHint, and a call left "+strings.Join(b.Snap.Tools, ", ")+" as it was"
	return c
}
