package battery

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/idemtest/idemtest/internal/check/spec"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
)

// rejected judges a call that must be refused, against the profile's status code.
func (b *Battery) rejected(c *Cell, r runner.Call, want int, what string) {
	c.Evidence = byStatus
	switch {
	case r.Outcome == scenario.Info:
		c.Status, c.Reason = Inconclusive, what+": the outcome is unknown"+statusNote(r)
	case r.Status == 0 || want == 0:
		c.Status, c.Reason = Pass, what+": rejected"+statusNote(r)
	case r.Status == want:
		c.Status, c.Reason = Pass, fmt.Sprintf("%s: rejected with %d", what, r.Status)
	default:
		c.Status = Warn
		c.Reason = fmt.Sprintf("%s: rejected with %d; the %s profile expects %d (safe, a protocol deviation)", what, r.Status, b.prof.Name, want)
	}
}

// inconclusiveControl turns a ✓ for a refused call into ? when a call with a fresh key and the
// same arguments is refused too: the refusal was not about the key.
func (b *Battery) inconclusiveControl(c *Cell, t runner.ToolInfo, args map[string]any, what string) {
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

// executedAnyway turns a refused call's cell into ✗ when the snapshot tools show that it
// executed all the same (a server that commits, then answers 422): from is the position of
// the snapshot reads just before the call (as state.Snapshots.ChangedAt has it). It reports whether it did.
func (b *Battery) executedAnyway(c *Cell, r runner.Call, tr *runner.Trial, from int, what string) bool {
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

// overruled turns a retry check's ✗ from the answers alone into what the state shows: the retry
// answered as a second execution would, yet left the state as the first call left it (a server
// that deduplicates by content). It is safe, but the agent never gets the first answer.
func (b *Battery) overruled(c *Cell, res *runner.ScenarioResult, what string) bool {
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

// twice explains a first call that failed after the plain call before the battery worked: with
// the same arguments (no {{ }} to make them unique per trial), the tool does not run twice.
func (b *Battery) twice(s *plan, first string) string {
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
