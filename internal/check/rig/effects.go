package rig

import (
	"fmt"
	"strings"

	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// effectsSource is the tool's declared effects expression as written, or "".
func (b *Rig) effectsSource(tool string) string {
	if ct := b.Config.Tools[tool]; ct != nil && ct.Effects != nil {
		return ct.Effects.Source
	}
	return ""
}

// measureEffects checks the declared effects expression on one call, twice: it must count 0
// before and 1 after, in each trial. An expression that does not is left out as evidence, with a diagnosis that says why.
func (b *Rig) measureEffects(t toolset.ToolInfo, args map[string]any) {
	src := b.effectsSource(t.Name)
	if src == "" || t.Natural {
		return
	}
	s := b.NewPlan(t, "effects", "effects of one call",
		scenariogen.Step{Assert: "(" + src + ") == 0"}, scenariogen.Step{ID: "first", CallTool: t.Name, Args: args},
		scenariogen.Step{Assert: "(" + src + ") == 1"})
	// Two trials: an expression that counts every trial's effects shows it in the second.
	s.Executions, s.Trials = -1, 2
	res, err := b.Exec(s)
	why := ""
	switch {
	case err != nil:
		why = err.Error()
	case res.Status == result.Passed:
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
func (b *Rig) beforeRun(s *Plan) {
	src := b.x.effects[s.Tool]
	if src == "" || s.Executions < 0 || s.Effects != "" {
		return
	}
	s.Effects = unless(s.CountUnless, fmt.Sprintf("(%s) == %d", src, s.Executions))
	at := len(s.Steps)
	for at > 0 && s.Steps[at-1].Assert != "" {
		at--
	}
	s.Steps = append(s.Steps[:at], append([]scenariogen.Step{{Assert: s.Effects}}, s.Steps[at:]...)...)
}

// afterRun keeps the run's result, the tool's latency, and whether the declared effects held.
func (b *Rig) afterRun(s *Plan, res *result.ScenarioResult) {
	s.Last = res
	// What the effects showed is the last run's: a concurrent round that caught nothing must
	// not carry an earlier round's lines, and one that caught something stops the rounds.
	s.EffectsLines = nil
	b.x.noteLatency(s.Tool, explain.Trial(res))
	for _, t := range res.History {
		for _, c := range t.Calls {
			if c.Instance != nil && c.Instance.Index > b.x.instances {
				b.x.instances = c.Instance.Index
			}
		}
	}
	if f := res.Failure; s.Effects != "" && f != nil && f.Kind == result.FailAssert && f.Expression == s.Effects {
		s.EffectsLines = append([]string{fmt.Sprintf("declared effects: %s is false", s.Effects)}, indent(f.Explanation)...)
	}
}

func indent(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = "  " + l
	}
	return out
}
