package runner

import (
	"github.com/idemtest/idemtest/internal/probe"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
)

// preflight applies the outbound policy to every target of the trial whose host is templated
// ({{ services.x.host }}), before the trial's first call: the endpoints its steps call and the
// probes it defines. The dial hooks check every connection again; this only makes the error
// come first, with the name of what was refused. A target that cannot be rendered yet is
// checked when it is used.
func (r *runner) preflight(st *trialState) *result.Failure {
	sc := st.sc
	var first *scenario.Step
	if len(sc.Steps) > 0 {
		first = sc.Steps[0]
	}
	fail := func(pos scenario.Pos, msg string) *result.Failure {
		f := &result.Failure{Kind: result.FailError, Pos: pos, Message: msg}
		if first != nil {
			f.Step = first.ID
		}
		return f
	}
	seen := map[string]bool{}
	for _, step := range sc.Steps {
		if step.Kind != scenario.CallStep || seen[step.Endpoint] {
			continue
		}
		seen[step.Endpoint] = true
		if _, _, err := r.endpoints.Get(sc, step.Endpoint); err != nil {
			return result.StepError(step, err)
		}
	}
	if p, err := probe.Check(sc, r.probeEnv(st)); err != nil {
		return fail(p.Pos, err.Error())
	}
	return nil
}
