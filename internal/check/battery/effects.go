package battery

import (
	"fmt"
	"strings"

	"github.com/idemtest/idemtest/internal/check/spec"
	"github.com/idemtest/idemtest/internal/runner"
)

// effectsSource is the tool's declared effects expression as written, or "".
func (b *Battery) effectsSource(tool string) string {
	if ct := b.cfg.Tools[tool]; ct != nil && ct.Effects != nil {
		return ct.Effects.Source
	}
	return ""
}

// measureEffects checks the declared effects expression on one call, twice: it must count 0
// before and 1 after, in each trial. An expression that does not is left out as evidence, with a diagnosis that says why.
func (b *Battery) measureEffects(t runner.ToolInfo, args map[string]any) {
	src := b.effectsSource(t.Name)
	if src == "" || t.Natural {
		return
	}
	s := b.spec(t, "effects", "effects of one call",
		spec.Step{Assert: "(" + src + ") == 0"}, spec.Step{ID: "first", CallTool: t.Name, Args: args},
		spec.Step{Assert: "(" + src + ") == 1"})
	// Two trials: an expression that counts every trial's effects shows it in the second.
	s.executions, s.Trials = -1, 2
	res, err := b.exec(s)
	why := ""
	switch {
	case err != nil:
		why = err.Error()
	case res.Status == runner.Passed:
		if b.x.effects == nil {
			b.x.effects = map[string]string{}
		}
		b.x.effects[t.Name] = src
		return
	case res.Failure != nil:
		why = res.Failure.Message
		if res.Failure.Expression != "" {
			when := "after one call"
			if strings.HasSuffix(res.Failure.Expression, "== 0") {
				when = "before any call"
			}
			why = fmt.Sprintf("it is not 0 before a call and 1 after one: %s %s", res.Failure.Message, when)
			if len(res.Failure.Explanation) > 0 {
				why += " (" + strings.TrimSpace(res.Failure.Explanation[0]) + ")"
			}
		}
	}
	b.x.diagnoses = append(b.x.diagnoses, fmt.Sprintf("check.tools.%s.effects is not used as evidence: %s; it must count the effects of this trial's calls only (filter by arguments unique to the session)", t.Name, why))
}

// beforeRun adds the declared effects to a spec whose executions are counted, as an assertion
// just after its calls (before the check's own assertions, so that it is always evaluated).
func (b *Battery) beforeRun(s *plan) {
	src := b.x.effects[s.Tool]
	if src == "" || s.executions < 0 || s.effects != "" {
		return
	}
	s.effects = fmt.Sprintf("(%s) == %d", src, s.executions)
	at := len(s.Steps)
	for at > 0 && s.Steps[at-1].Assert != "" {
		at--
	}
	s.Steps = append(s.Steps[:at], append([]spec.Step{{Assert: s.effects}}, s.Steps[at:]...)...)
}

// afterRun keeps the run's result, the tool's latency, and whether the declared effects held.
func (b *Battery) afterRun(s *plan, res *runner.ScenarioResult) {
	s.last = res
	b.x.noteLatency(s.Tool, trialOf(res))
	if f := res.Failure; s.effects != "" && f != nil && f.Kind == "assert" && f.Expression == s.effects {
		s.effectsLines = append([]string{fmt.Sprintf("declared effects: %s is false", s.effects)}, indent(f.Explanation)...)
	}
}

func indent(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = "  " + l
	}
	return out
}

// withEffects adds the declared effects to a decided cell: the strongest evidence, named first.
// A cell that only effects or sinks can decide (needsEvidence) is decided by them.
func (b *Battery) withEffects(c *Cell) *Cell {
	s := c.plan
	if s != nil && s.effects == "" && s.needsEvidence && c.Status == Inconclusive && s.sinksAsserted {
		// No effects declared: the sinks decide, having heard one execution's requests or more.
		if len(s.sinkNames) > 0 {
			c.Status, c.Evidence = Fail, bySinks+" ("+strings.Join(s.sinkNames, ", ")+")"
			c.Reason = "the sinks heard another execution: " + strings.Join(s.sinkLines, "; ")
			return c
		}
		c.Status, c.Evidence = Pass, bySinks+" ("+strings.Join(sortedKeys(b.perCall), ", ")+")"
		c.Reason = fmt.Sprintf("the sinks heard %d execution(s), as they should", s.executions)
		c.Details = nil
		return c
	}
	if s == nil || s.effects == "" || c.Status == Skip {
		return c
	}
	if len(s.effectsLines) > 0 {
		if c.Status != Fail {
			c.Status, c.Reason = Fail, "the declared effects counted another number of executions than "+fmt.Sprint(s.executions)
		}
		c.Evidence = strings.TrimSuffix(byEffects+", "+c.Evidence, ", ")
		c.Details = append(append([]string(nil), s.effectsLines...), c.Details...)
		return c
	}
	if c.Status == Inconclusive && s.needsEvidence {
		c.Status, c.Evidence = Pass, byEffects
		c.Reason = fmt.Sprintf("the declared effects count %d execution(s), as they should", s.executions)
		c.Details = nil
	} else if c.Status == Pass {
		c.Evidence = strings.TrimSuffix(byEffects+", "+c.Evidence, ", ")
	}
	return c
}
