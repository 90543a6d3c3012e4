package toolset

import (
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

// Describe says what idemtest makes of each tool of an endpoint: tools are what its server listed
// (listed) or, for a plain HTTP endpoint, the configured mutating ones.
func Describe(def *scenario.Endpoint, tools []endpoint.Tool, listed bool) []ToolInfo {
	carrier := def.Key.String()
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
	return out
}

// Mutating decides whether idemtest sends tool a key and treats it as mutating: the endpoint's
// mutating list when it has one; else, when the server described the tool (t), every tool not
// annotated readOnlyHint; else (a plain HTTP endpoint without a list) every tool. run, tools,
// init and check all decide here.
func Mutating(def *scenario.Endpoint, tool string, t *endpoint.Tool) bool {
	if def.Mutating != nil || t == nil {
		return def.IsMutating(tool)
	}
	return !t.ReadOnly
}

// Natural decides whether a tool is idempotent by nature, so that its answers are no evidence of
// executions: the endpoint's natural list when it has one (even empty), else the tool's
// idempotentHint.
func Natural(def *scenario.Endpoint, tool string, t *endpoint.Tool) bool {
	if def.Natural != nil || t == nil {
		return def.IsNatural(tool)
	}
	return t.Idempotent
}
