package runner

import (
	"context"
	"fmt"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/verdict"
)

// maxVerdictShown bounds the violations one failure explains in full.
const maxVerdictShown = 3

// natural reports whether a tool is idempotent by nature, so that its answers are no evidence
// of executions: the endpoint's natural list when it has one, else the tool's idempotentHint.
func (r *runner) natural(ctx context.Context, ep endpoint.Endpoint, def *scenario.Endpoint, tool string) bool {
	lister, ok := ep.(endpoint.ToolLister)
	if !ok || def.Natural != nil {
		return Natural(def, tool, nil)
	}
	tools, err := lister.Tools(ctx)
	if err != nil {
		return false
	}
	for _, t := range tools {
		if t.Name == tool {
			return Natural(def, tool, &t)
		}
	}
	return false
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
	st.mu.Unlock()
	if len(j.Violations) == 0 {
		return
	}
	t := st.trial
	var said []string
	for _, v := range j.Violations {
		said = append(said, verdictLine(v))
	}
	if t.Failure == nil {
		first := j.Violations[0]
		step := st.step(st.judged[first.First].Step)
		f := stepFailure(FailVerdict, step, verdictLine(first))
		f.Explanation = append(first.Explain(), st.more(j.Violations[1:])...)
		f.Verdict = said
		t.Failure, t.Passed = f, false
		return
	}
	t.Failure.Verdict = said
	t.Failure.Explanation = append(t.Failure.Explanation, "the exactly-once verdict also failed:")
	t.Failure.Explanation = append(t.Failure.Explanation, st.more(j.Violations)...)
}

// verdictLine states a violation in words, then the likely cause on the server.
func verdictLine(v verdict.Violation) string { return v.Message() + " — " + v.Hint() }

// more explains further violations, each under its message and position.
func (st *trialState) more(vs []verdict.Violation) []string {
	var out []string
	for i, v := range vs {
		if i == maxVerdictShown {
			out = append(out, fmt.Sprintf("… and %d more violations", len(vs)-maxVerdictShown))
			break
		}
		step := st.step(st.judged[v.First].Step)
		out = append(out, fmt.Sprintf("%s: step %s: %s", step.Pos, step.ID, verdictLine(v)))
		for _, l := range v.Explain() {
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
