package runner

import (
	"context"
	"fmt"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/toolset"
	"github.com/idemtest/idemtest/internal/verdict"
)

// maxVerdictShown bounds the violations one failure explains in full.
const maxVerdictShown = 3

// exemption says why the verdict does not judge a step's calls (an Unjudged reason), or "":
// verdict: off on the step; a tool idempotent by nature, by the endpoint's natural list when
// it has one, else by the tool's idempotentHint.
func (r *runner) exemption(ctx context.Context, ep endpoint.Endpoint, def *scenario.Endpoint, step *scenario.Step) string {
	if step.VerdictOff {
		return result.UnjudgedOff
	}
	lister, ok := ep.(endpoint.ToolLister)
	if !ok || def.Natural != nil {
		if toolset.Natural(def, step.Tool, nil) {
			return result.UnjudgedNatural
		}
		return ""
	}
	t, ok, err := lister.Tool(ctx, step.Tool)
	if err != nil || !ok {
		return ""
	}
	if toolset.Natural(def, step.Tool, &t) {
		return result.UnjudgedHint
	}
	return ""
}

// judge runs the exactly-once verdict (DESIGN §8) on a trial's calls. A violation fails the
// trial with its own failure; when the trial already failed, the violations are added to that
// failure's explanation, so the report shows them either way.
func (r *runner) judge(st *trialState) {
	st.mu.Lock()
	j := verdict.Judge(st.judged)
	st.metrics.Replayed += j.Replays
	st.metrics.DuplicateExecutions += j.Duplicates
	for _, v := range j.Violations {
		if v.Kind == verdict.ReplayDiffers {
			st.metrics.ReplaysDiffer++
		}
	}
	var unproven []result.Unjudged
	for _, u := range j.Unprovable {
		n := result.Unjudged{Endpoint: u.Endpoint, Tool: u.Tool, Reason: result.UnjudgedNoID, Calls: u.Calls}
		st.metrics.AddUnjudged(n)
		unproven = mergeUnjudged(unproven, n)
	}
	st.mu.Unlock()
	if len(j.Violations) == 0 && len(unproven) == 0 {
		return
	}
	var lines []string
	for _, u := range unproven {
		lines = append(lines, u.Message())
	}
	if len(unproven) > 0 {
		lines = append(lines, "  equal answers without an id are what a server that ignores keys and executes every call gives too; they prove no replay")
	}
	// The explanations quote the answers cut short, which would cut a secret in two before the
	// result is redacted: they quote them redacted (the verdict above compared them whole).
	red := r.redactor(st.sc)
	for i := range j.Violations {
		j.Violations[i] = redacted(j.Violations[i], red)
	}
	t := st.trial
	var said []string
	for _, v := range j.Violations {
		said = append(said, verdictLine(v))
	}
	for _, u := range unproven {
		said = append(said, u.Message())
	}
	var ids []result.Violation
	for _, v := range j.Violations {
		ids = append(ids, result.Violation{Kind: string(v.Kind), Tool: v.Tool, Step: st.judged[v.First].Step})
	}
	for _, u := range j.Unprovable {
		ids = append(ids, result.Violation{Kind: "unprovable", Tool: u.Tool, Step: st.judged[u.First].Step})
	}
	if t.Failure == nil {
		if len(j.Violations) > 0 {
			first := j.Violations[0]
			step := st.step(st.judged[first.First].Step)
			f := result.StepFailure(result.FailVerdict, step, verdictLine(first))
			f.Violation, f.Tool = string(first.Kind), first.Tool
			f.Explanation = append(append(first.Explain(), st.more(j.Violations[1:], false)...), lines...)
			f.Verdict, f.Violations = said, ids
			t.Failure, t.Passed = f, false
			return
		}
		// A verdict that cannot go red must not pass as green (DESIGN §8): the trial fails
		// unless the step sets verdict: off or the tool is declared idempotent by nature.
		step := st.step(st.judged[j.Unprovable[0].First].Step)
		f := result.StepFailure(result.FailVerdict, step, lines[0])
		f.Violation, f.Tool = "unprovable", j.Unprovable[0].Tool
		f.Explanation = lines[1:]
		f.Verdict, f.Violations = said, ids
		t.Failure, t.Passed = f, false
		return
	}
	t.Failure.Verdict, t.Failure.Violations = said, ids
	n := len(t.Failure.Explanation)
	t.Failure.Explanation = append(t.Failure.Explanation, "the exactly-once verdict also failed:")
	t.Failure.Explanation = append(t.Failure.Explanation, st.more(j.Violations, t.Failure.Kind == result.FailAssert)...)
	t.Failure.Explanation = append(t.Failure.Explanation, lines...)
	t.Failure.VerdictLines = len(t.Failure.Explanation) - n
}

// mergeUnjudged adds u to us, summing calls of the same tool and reason.
func mergeUnjudged(us []result.Unjudged, u result.Unjudged) []result.Unjudged {
	m := result.Metrics{Unjudged: us}
	m.AddUnjudged(u)
	return m.Unjudged
}

// redacted is v with its answers redacted, for its explanation.
func redacted(v verdict.Violation, red *redact.Redactor) verdict.Violation {
	answers := make([]verdict.Call, len(v.Answers))
	for i, c := range v.Answers {
		c.Answer = red.Value(c.Answer)
		answers[i] = c
	}
	v.Answers = answers
	return v
}

// verdictLine states a violation in words, then the likely cause on the server.
func verdictLine(v verdict.Violation) string { return v.Message() + " — " + v.Hint() }

// more explains further violations, each under its message and position.
func (st *trialState) more(vs []verdict.Violation, assertFailed bool) []string {
	var out []string
	for i, v := range vs {
		if i == maxVerdictShown {
			out = append(out, fmt.Sprintf("… and %d more violations", len(vs)-maxVerdictShown))
			break
		}
		step := st.step(st.judged[v.First].Step)
		out = append(out, fmt.Sprintf("%s: step %s: %s", step.Pos, step.ID, verdictLine(v)))
		explain := v.Explain()
		if assertFailed {
			explain = v.ExplainBesideAssertion()
		}
		for _, l := range explain {
			out = append(out, "  "+l)
		}
	}
	return out
}

// step finds a call step of the trial's scenario by id.
func (st *trialState) step(id string) *scenario.Step {
	for _, s := range st.sc.Steps {
		if s.ID == id {
			return s
		}
	}
	return &scenario.Step{ID: id, Pos: st.sc.Pos}
}
