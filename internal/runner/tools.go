package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/scenario"
)

// ToolInfo is what idemtest knows and decides about one tool of an endpoint.
type ToolInfo struct {
	endpoint.Tool
	// KeyCarrier says where the key goes: "header Idempotency-Key", "arg idempotencyKey", "meta …".
	KeyCarrier string `json:"key_carrier"`
	// AcceptsKey reports whether the input schema declares the key argument ("" when unknown:
	// the key is not an argument, or the server publishes no schema).
	AcceptsKey string `json:"accepts_key"`
	// Mutating reports whether idemtest sends the tool a key and treats it as mutating.
	Mutating bool `json:"mutating"`
	// Natural reports whether the tool is idempotent by nature: its answers are no evidence.
	Natural bool `json:"natural"`
}

// Tools starts what the endpoint needs (its services, its server), lists its tools with what
// idemtest makes of each, and stops everything again.
func Tools(ctx context.Context, sc *scenario.Scenario, name string) ([]ToolInfo, error) {
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
func (e *Env) Tools(ctx context.Context, sc *scenario.Scenario, name string) ([]ToolInfo, error) {
	def, ok := sc.Endpoints[name]
	if !ok {
		return nil, fmt.Errorf("no endpoint %q", name)
	}
	ep, _, err := e.r.endpoints.Get(sc, name)
	if err != nil {
		return nil, err
	}
	carrier := def.Key.String()
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
	out := make([]ToolInfo, 0, len(tools))
	for _, t := range tools {
		info := ToolInfo{Tool: t, KeyCarrier: carrier, Natural: Natural(def, t.Name, nil)}
		if t.KeyHeader != "" && def.Key.Header != "" {
			// An OpenAPI operation names its own key header.
			info.KeyCarrier = "header " + t.KeyHeader
		}
		if listed {
			info.Mutating, info.Natural = Mutating(def, t.Name, &t), Natural(def, t.Name, &t)
		} else {
			info.Mutating = Mutating(def, t.Name, nil)
		}
		if def.Key.Arg != "" && t.InputSchema != nil {
			info.AcceptsKey = "no"
			if t.AcceptsArg(def.Key.Arg) {
				info.AcceptsKey = "yes"
			}
		}
		out = append(out, info)
	}
	return out, nil
}
