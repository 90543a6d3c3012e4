package battery

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// run decides one cell, and adds what the sinks heard to it.
func (b *Battery) run(id string, t toolset.ToolInfo, args map[string]any) *Cell {
	c := b.cell(id, t, args)
	s := c.plan
	if s == nil || s.Executions < 0 || len(b.Sinks()) == 0 || c.Status == matrix.Inconclusive || c.Status == matrix.Skip || c.Evidence.Has(matrix.EvidenceSinks) {
		return c
	}
	if len(s.SinkNames) == 0 {
		if c.Status == matrix.Pass {
			c.Evidence = c.Evidence.Lead(sinks(b.Sinks()))
		}
		return c
	}
	heard := sinksHeard(s)
	if c.Status != matrix.Fail {
		c.Status, c.Reason = matrix.Fail, ""
	}
	c.lead(sinks(s.SinkNames), heard)
	c.Details = append(append([]string(nil), s.SinkLines...), c.Details...)
	if !s.SinksFewer {
		b.executedAgain(c)
	}
	return c
}

// sinksHeard says what sinks that heard another number of requests than the executions send
// showed: another execution's requests when one heard more, else requests that never came.
func sinksHeard(s *rig.Plan) string {
	if s.SinksFewer {
		return fmt.Sprintf("the sinks heard fewer requests than %d execution(s) send: %s", s.Executions, strings.Join(s.SinkLines, "; "))
	}
	return "the sinks heard another execution: " + strings.Join(s.SinkLines, "; ")
}

// effectsCounted says that the declared effects counted another number of executions than the
// plan's.
func effectsCounted(s *rig.Plan) string {
	return "the declared effects counted another number of executions than " + fmt.Sprint(s.Executions)
}

// withEffects adds the declared effects to a decided cell: the strongest evidence, named first.
// A cell that only effects or sinks can show failed (NeedsEvidence) is ✗ when they count another
// number of executions; when they count the right one it stays ?, saying so.
func (b *Battery) withEffects(c *Cell) *Cell {
	s := c.plan
	if s != nil && s.Effects == "" && s.NeedsEvidence && c.Status == matrix.Inconclusive && s.SinksAsserted {
		// No effects declared: the sinks decide, having heard one execution's requests or more.
		if len(s.SinkNames) > 0 {
			c.Status, c.Evidence = matrix.Fail, matrix.Evidences{sinks(s.SinkNames)}
			c.Reason = sinksHeard(s)
			return c
		}
		c.Evidence = matrix.Evidences{sinks(b.Sinks())}
		c.Reason = fmt.Sprintf("the retry's answer is not marked as a replay and the sinks heard %d execution(s): %s", s.Executions, neverRan)
		return c
	}
	if s == nil || s.Effects == "" || c.Status == matrix.Skip {
		return c
	}
	if c.Evidence.Has(matrix.EvidenceEffects) {
		// Decided by the effects already (a concurrent round they caught).
		return c
	}
	if len(s.EffectsLines) > 0 {
		counted := effectsCounted(s)
		if c.Status != matrix.Fail {
			c.Status, c.Reason = matrix.Fail, ""
		}
		c.lead(effects, counted)
		c.Details = append(append([]string(nil), s.EffectsLines...), c.Details...)
		b.executedAgain(c)
		return c
	}
	if c.Status == matrix.Inconclusive && s.NeedsEvidence {
		c.Evidence = matrix.Evidences{effects}
		c.Reason = fmt.Sprintf("the retry's answer is not marked as a replay and the declared effects count %d execution(s): %s", s.Executions, neverRan)
	} else if c.Status == matrix.Pass {
		c.Evidence = c.Evidence.Lead(effects)
	}
	return c
}

// lead puts stronger evidence, and what it showed, before what already decided the cell (DESIGN
// §9: effects, sinks, state, then the answers and status codes): the state counts executions,
// the answers only suggest them. The reason the cell had, if it was ✗ already, follows as the
// weaker evidence agreeing.
func (c *Cell) lead(evidence matrix.Evidence, showed string) {
	if c.Reason != "" {
		switch {
		case c.Evidence.Leads(matrix.EvidenceAnswers):
			showed += "; the answers agree: " + c.Reason
		case c.Evidence.Leads(matrix.EvidenceStatus):
			showed += "; the status code agrees: " + c.Reason
		default:
			showed += "; " + c.Reason
		}
	}
	c.Reason = showed
	c.Evidence = c.Evidence.Lead(evidence)
}

// rejected judges a call that must be refused, against the profile's status code.
func (b *Battery) rejected(c *Cell, r result.Call, want int, what string) {
	c.Evidence = byStatus()
	switch {
	case r.Outcome == outcome.Info:
		c.Status, c.Reason = matrix.Inconclusive, what+": the outcome is unknown"+explain.StatusNote(r)
	case r.Status == 0 || want == 0 || r.Status == want:
		// Worded alike whatever carried the refusal (an HTTP status, an MCP isError, a JSON-RPC
		// error, an error-shaped answer): the transport's words are in the note.
		c.Status, c.Reason = matrix.Pass, what+": rejected"+explain.StatusNote(r)
	default:
		c.Status = matrix.Warn
		c.Reason = fmt.Sprintf("%s: rejected with %d; the %s profile expects %d (safe, a protocol deviation)", what, r.Status, b.prof.Name, want)
	}
}

// inconclusiveControl turns a ✓ for a refused call into ? when a call with a fresh key and the
// same arguments is refused too: the refusal was not about the key.
func (b *Battery) inconclusiveControl(c *Cell, t toolset.ToolInfo, args map[string]any, what string) {
	if c.Status != matrix.Pass && c.Status != matrix.Warn {
		return
	}
	ok, why := b.Control(t, args)
	if ok {
		return
	}
	c.Status, c.Evidence = matrix.Inconclusive, byStatus()
	c.Reason = what + " was refused, but so is a call with a fresh key" + why + ": the refusal is not about the key"
}

// executedAnyway turns a refused call's cell into ✗ when the snapshot tools show that it
// executed all the same (a server that commits, then answers 422): from is the position of
// the snapshot reads just before the call (as state.Snapshots.ChangedAt has it). It reports whether it did.
func (b *Battery) executedAnyway(c *Cell, r result.Call, tr *result.Trial, from int, what string) bool {
	if r.Outcome != outcome.Fail {
		return false
	}
	changed, _ := b.Snap.ChangedAt(tr, from)
	if len(changed) == 0 {
		return false
	}
	c.Status, c.Evidence = matrix.Fail, byStatus().Lead(state(changed))
	c.Reason = what + " executed: it changed " + strings.Join(changed, ", ") + ", though it was refused" + explain.StatusNote(r)
	return true
}

// overruled turns a retry check's ✗ from the answers alone into what the state shows: the retry
// answered as a second execution would, yet left the state as the first call left it (a server
// that deduplicates by content). It is safe, but the agent never gets the first answer.
func (b *Battery) overruled(c *Cell, res *result.ScenarioResult, what string) bool {
	if c.Status != matrix.Fail || !c.Evidence.Only(matrix.EvidenceAnswers) || res == nil || res.Metrics.DuplicateExecutions == 0 {
		return false
	}
	moved, same := b.Snap.Same(explain.Trial(res))
	if !same {
		return false
	}
	if f, ok := b.Snap.MintedKey(explain.Trial(res), "retry"); ok {
		c.Evidence = append(c.Evidence, state(moved))
		c.Reason += "; " + what + " answered with a new " + f.String() + " that no earlier answer carried: " + mintedWhy(moved)
		return true
	}
	c.Status, c.Evidence = matrix.Warn, matrix.Evidences{state(moved), overruledAnswers}
	b.contentDedup, c.twice = true, true
	stateDecides(c.Scenario, "retry", "again")
	c.Reason = sameState + what + " answered as a second execution, not with the first call's answer, but left " + strings.Join(moved, ", ") +
		" as the first call left it: idempotent by nature, or the server deduplicates by content (safe); keys are not honoured, so the agent never gets the first answer" + naturalHint(c)
	return true
}

// sameState begins the reason of a retry that executed again and left the state as one call does.
const sameState = "executed twice, same state: "

// naturalHint says how to tell idemtest that a tool may execute again harmlessly.
func naturalHint(c *Cell) string {
	if c.plan == nil {
		return ""
	}
	return " (if executing again is harmless, declare it: natural: [" + c.plan.Tool + "] on the endpoint)"
}

// executedAgain marks a retry cell that the effects or the sinks decided ✗ by another execution
// (they count executions; the answers may have passed it): the keys are not honoured. When the
// state reads show the retry left the state as the first call left it, the reason says so first:
// the tool is idempotent by nature in its state, yet its declared side effects happened twice.
func (b *Battery) executedAgain(c *Cell) {
	switch c.Check {
	case Replay, LostResponse, Expiry:
	default:
		return
	}
	c.twice = true
	if c.plan == nil || c.plan.Last == nil || strings.HasPrefix(c.Reason, sameState) {
		return
	}
	if moved, same := b.Snap.Same(explain.Trial(c.plan.Last)); same {
		if !c.Evidence.Has(matrix.EvidenceState) {
			c.Evidence = append(c.Evidence, state(moved))
		}
		c.Reason = sameState + c.Reason + "; yet " + strings.Join(moved, ", ") + " answers as after one call: idempotent by nature in its state, but keys are not honoured" + naturalHint(c)
	}
}

// mintedWhy explains a ✗ that an unchanged state view did not overrule.
func mintedWhy(moved []string) string {
	return "a second execution, though " + strings.Join(moved, ", ") + " did not change (a view that does not count executions cannot rule one out)"
}

// twice explains a first call that failed after the plain call before the battery worked: with
// the same arguments (no {{ }} to make them unique per trial), the tool does not run twice.
func (b *Battery) twice(s *rig.Plan, first string) string {
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

// stateDecides leaves steps out of the exactly-once verdict in the saved scenario, once the
// state overruled the answers: run then judges them as check did, by the state assertions.
func stateDecides(s *scenariogen.Spec, steps ...string) {
	for _, step := range steps {
		stateDecidesBecause(s, step, " The server deduplicates by content: its answers differ though the state shows one execution, so the state decides (verdict: off).")
	}
}

// stateDecidesBecause turns the verdict off on a saved spec's step, saying why in its comment
// (once).
func stateDecidesBecause(s *scenariogen.Spec, step, why string) {
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
