package check

import (
	"encoding/json"
	"strings"

	"github.com/idemtest/idemtest/internal/check/spec"
	"github.com/idemtest/idemtest/internal/check/synth"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
)

// State evidence (DESIGN §9) outranks the answers: a server that deduplicates by content answers
// a retry differently ("nothing created") yet leaves the state as one call left it, and a server
// whose racing copies all answer alike may still have changed the state once per copy.

// overruled turns a retry check's ✗ from the answers alone into what the state shows: the retry
// answered as a second execution would, yet left the state as the first call left it (a server
// that deduplicates by content). It is safe, but the agent never gets the first answer.
func (b *battery) overruled(c *Cell, res *runner.ScenarioResult, what string) bool {
	if c.Status != Fail || c.Evidence != byAnswers || res == nil || res.Metrics.DuplicateExecutions == 0 {
		return false
	}
	moved, same := b.snap.Same(trialOf(res))
	if !same {
		return false
	}
	if f, ok := b.snap.MintedKey(trialOf(res), "retry"); ok {
		c.Evidence += ", state (" + strings.Join(moved, ", ") + ")"
		c.Reason += "; " + what + " answered with a new " + f.String() + " that no earlier answer carried: " + mintedWhy(moved)
		return true
	}
	c.Status, c.Evidence = Warn, "state ("+strings.Join(moved, ", ")+"), answers"
	b.contentDedup = true
	stateDecides(c.Scenario, "retry", "again")
	c.Reason = what + " answered differently from the first call but left " + strings.Join(moved, ", ") +
		" as the first call left it: the server deduplicates by content (safe), but the agent never gets the first answer"
	return true
}

// mintedWhy explains a ✗ that an unchanged state view did not overrule.
func mintedWhy(moved []string) string {
	return "a second execution, though " + strings.Join(moved, ", ") + " did not change (a view that does not count executions cannot rule one out)"
}

// control calls the tool once with a fresh key: a refusal says something about keys only when
// such a call works.
func (b *battery) control(t runner.ToolInfo, args map[string]any) (ok bool, why string) {
	s := b.spec(t, "control", "a call with a fresh key", spec.Step{ID: "control", CallTool: t.Name, Args: args, Expect: "any"})
	res, err := b.exec(s)
	if err != nil {
		return false, err.Error()
	}
	rs := calls(trialOf(res), "control")
	if len(rs) == 0 {
		return false, "not sent"
	}
	return rs[0].Outcome == scenario.OK, statusNote(rs[0])
}

// inconclusiveControl turns a ✓ for a refused call into ? when a call with a fresh key and the
// same arguments is refused too: the refusal was not about the key.
func (b *battery) inconclusiveControl(c *Cell, t runner.ToolInfo, args map[string]any, what string) {
	if c.Status != Pass && c.Status != Warn {
		return
	}
	ok, why := b.control(t, args)
	if ok {
		return
	}
	c.Status, c.Evidence = Inconclusive, byStatus
	c.Reason = what + " was refused, but so is a call with a fresh key" + why + ": the refusal is not about the key"
}

// distinctEvidence revises a distinct-keys cell with what else is known: a second call that
// changed nothing though the first did (the server deduplicates by content), or a refusal that a
// call with other arguments gets too (it is not about the payload).
func (b *battery) distinctEvidence(c *Cell, tr *runner.Trial, t runner.ToolInfo, args map[string]any) {
	switch c.Status {
	case Pass:
		moved, same := b.snap.Same(tr)
		if _, ok := b.snap.Minted(tr, "first", "second"); same && !ok {
			c.Status, c.Evidence = Warn, "state ("+strings.Join(moved, ", ")+")"
			c.Reason = "the second key's call left " + strings.Join(moved, ", ") + " as the first call left it: the server deduplicates by content, so one payload is one operation whatever the keys"
		}
	case Fail:
		other, _, ok := synth.Vary(args)
		if !ok {
			return
		}
		if works, why := b.control(t, other); !works {
			c.Status = Inconclusive
			c.Reason = "a new key with the same arguments was refused, but so is a call with other arguments" + why + ": the refusal is not a dedupe on the payload"
		}
	}
}

// twice explains a first call that failed after the plain call before the battery worked: with
// the same arguments (no {{ }} to make them unique per trial), the tool does not run twice.
func (b *battery) twice(s *plan, first string) string {
	for _, st := range s.Steps {
		if st.ID != first {
			continue
		}
		raw, _ := json.Marshal(st.Args)
		if !strings.Contains(string(raw), "{{") {
			return "; the same arguments worked in the plain call before the battery, so the tool does not run twice with them"
		}
	}
	return "; give working arguments under check: {tools: {" + s.Tool + ": {args: …}}}"
}

// readOnly judges a tool annotated readOnlyHint that is checked as mutating: one call must leave
// every snapshot tool's answer as it was.
func (b *battery) readOnly(t runner.ToolInfo, call spec.Step) *Cell {
	s := b.spec(t, Annotations, "readOnlyHint: a call changes nothing", b.snap.AroundOne(call)...)
	s.Comment = "The tool is annotated readOnlyHint: a call must leave the state as it was."
	j, done := b.judge(s, call.ID, call.ID)
	c, res, tr := j.cell, j.res, j.tr
	if done {
		return c
	}
	if len(b.snap.Tools) == 0 {
		c.Status, c.Reason = Inconclusive, "annotated readOnlyHint, and no read-only tool without required arguments can show the state"
		return c
	}
	changed, unread := b.snap.ChangedAt(tr, 0)
	if len(unread) > 0 {
		c.Status, c.Reason = Inconclusive, "could not read "+unread[0]+" before and after the call"
		return c
	}
	c.Evidence = "state (" + strings.Join(b.snap.Tools, ", ") + ")"
	if len(changed) > 0 {
		c.Status = Fail
		c.Reason = "annotated readOnlyHint, yet one call changed " + strings.Join(changed, ", ")
		c.Details = details(res, tr)
		return c
	}
	c.Status, c.Reason = Pass, "annotated readOnlyHint, and a call left "+strings.Join(b.snap.Tools, ", ")+" as it was"
	return c
}

// firstFailed reports whether the step's call failed, its discarded answer included.
func firstFailed(t *runner.Trial, step string) bool {
	rs := calls(t, step)
	return len(rs) > 0 && (rs[0].Outcome == scenario.Fail || rs[0].Discarded == scenario.Fail)
}

// oneLine keeps a cell's reason and each detail on one line: servers' error messages (an edit
// that did not match, a stack) carry newlines that would break the matrix's layout.
func oneLine(c *Cell) {
	c.Reason = strings.ReplaceAll(c.Reason, "\n", " ")
	for i, l := range c.Details {
		c.Details[i] = strings.ReplaceAll(l, "\n", " ")
	}
}

// stateDecides leaves steps out of the exactly-once verdict in the saved scenario, once the
// state overruled the answers: run then judges them as check did, by the state assertions.
func stateDecides(s *spec.Spec, steps ...string) {
	for _, step := range steps {
		stateDecidesBecause(s, step, " The server deduplicates by content: its answers differ though the state shows one execution, so the state decides (verdict: off).")
	}
}

// stateDecidesBecause turns the verdict off on a saved spec's step, saying why in its comment
// (once).
func stateDecidesBecause(s *spec.Spec, step, why string) {
	if s == nil {
		return
	}
	for i := range s.Steps {
		if s.Steps[i].ID == step {
			s.Steps[i].Verdict = "off"
			if !strings.Contains(s.Comment, why) {
				s.Comment += why
			}
		}
	}
}

// executedAnyway turns a refused call's cell into ✗ when the snapshot tools show that it
// executed all the same (a server that commits, then answers 422): from is the position of
// the snapshot reads just before the call (as state.Snapshots.ChangedAt has it). It reports whether it did.
func (b *battery) executedAnyway(c *Cell, r runner.Call, tr *runner.Trial, from int, what string) bool {
	if r.Outcome != scenario.Fail {
		return false
	}
	changed, _ := b.snap.ChangedAt(tr, from)
	if len(changed) == 0 {
		return false
	}
	c.Status, c.Evidence = Fail, byStatus+", state ("+strings.Join(changed, ", ")+")"
	c.Reason = what + " was refused" + statusNote(r) + " but executed: it changed " + strings.Join(changed, ", ")
	return true
}
