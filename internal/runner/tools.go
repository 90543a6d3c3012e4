package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/toolset"
)

// Tools starts what the endpoint needs (its services, its server), lists its tools with what
// idemtest makes of each, and stops everything again.
func Tools(ctx context.Context, sc *scenario.Scenario, name string) ([]toolset.ToolInfo, error) {
	_, ok := sc.Endpoints[name]
	if !ok {
		names := slices.Sorted(maps.Keys(sc.Endpoints))
		if len(names) == 0 {
			return nil, fmt.Errorf("no endpoint %q: no endpoints are configured (idemtest.yaml or --config)", name)
		}
		return nil, fmt.Errorf("no endpoint %q; configured: %s", name, strings.Join(names, ", "))
	}
	env, err := Start(ctx, []*scenario.Scenario{sc})
	if err != nil {
		return nil, err
	}
	defer env.Close()
	// Nothing is called: a document's operations list whatever host its servers name.
	env.r.endpoints.ListOnly = true
	return env.Tools(ctx, sc, name)
}

// Tools lists the tools of a started endpoint with what idemtest makes of each.
func (e *Env) Tools(ctx context.Context, sc *scenario.Scenario, name string) ([]toolset.ToolInfo, error) {
	def, ok := sc.Endpoints[name]
	if !ok {
		return nil, fmt.Errorf("no endpoint %q", name)
	}
	ep, _, err := e.r.endpoints.Get(sc, name)
	if err != nil {
		return nil, err
	}
	var tools []endpoint.Tool
	lister, listed := ep.(endpoint.ToolLister)
	if listed {
		if tools, err = lister.Tools(ctx); err != nil {
			return nil, err
		}
	} else {
		// A plain HTTP endpoint cannot be asked: its tools are the configured mutating ones.
		for _, t := range def.Mutating {
			tools = append(tools, endpoint.Tool{Name: t})
		}
		if len(tools) == 0 {
			return nil, fmt.Errorf("endpoint %s is plain HTTP and cannot list its tools; list them under mutating: in its config", name)
		}
	}
	return toolset.Describe(def, tools, listed), nil
}
