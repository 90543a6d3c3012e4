package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/probe"
	"github.com/idemtest/idemtest/internal/scenario"
)

// observe refreshes the sinks and the probes an expression uses in the trial's environment.
// A probe that fails leaves its error as its value and returns it.
func (r *runner) observe(ctx context.Context, st *trialState, uses func(string) bool) error {
	for _, s := range r.sinks.of(st.sc) {
		st.env[s.def.Name] = s.s.Snapshot()
	}
	var errs []error
	for _, name := range probe.Names(st.sc) {
		if !uses(name) {
			continue
		}
		v, err := r.probes.Eval(ctx, st.sc, st.sc.Probes[name], r.probeEnv(st))
		if err != nil {
			err = fmt.Errorf("probe %s: %w", name, err)
			errs = append(errs, err)
			st.env[name] = nil
			continue
		}
		st.env[name] = v
	}
	return errors.Join(errs...)
}

func (r *runner) probeEnv(st *trialState) map[string]any {
	env := r.svcs.TemplateEnv(st.sc)
	env["session"], env["trial"] = st.env["session"], st.env["trial"]
	return env
}

// probeTool answers a call_tool probe through the scenario's endpoint; a probe must not change
// anything, so a mutating tool is refused.
func (r *runner) probeTool(ctx context.Context, sc *scenario.Scenario, p *scenario.Probe, env map[string]any) (any, error) {
	name := sc.ProbeEndpoint(p)
	ep, def, err := r.endpoints.Get(sc, name)
	if err != nil {
		return nil, err
	}
	if mutating, err := r.mutating(ctx, ep, def, p.CallTool.Tool); err != nil {
		return nil, err
	} else if mutating {
		return nil, fmt.Errorf("%s is a mutating tool of endpoint %s (not readOnlyHint); a probe must not change anything", p.CallTool.Tool, name)
	}
	args, err := render(p.CallTool.Args, env)
	if err != nil {
		return nil, err
	}
	m, _ := args.(map[string]any)
	res := ep.Call(ctx, endpoint.Request{Tool: p.CallTool.Tool, Args: m})
	if res.Outcome != outcome.OK {
		return nil, fmt.Errorf("%s: %s %s", p.CallTool.Tool, res.Outcome, res.Error)
	}
	return res.Result, nil
}
