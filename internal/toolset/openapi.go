package toolset

import (
	"context"
	"fmt"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/openapi"
	"github.com/idemtest/idemtest/internal/scenario"
)

// openAPI returns the endpoint's OpenAPI document, nil when its tools are configured by hand: the
// one loaded with the config (a file), else read now from its URL through the outbound policy.
func openAPI(ctx context.Context, def *scenario.Endpoint, str func(*assert.Template, string) (string, error), checkHost func(string) error, allow []string) (*openapi.Spec, error) {
	h := def.HTTP
	if h.Spec != nil || h.OpenAPI == nil {
		return h.Spec, nil
	}
	src, err := str(h.OpenAPI, "openapi")
	if err != nil {
		return nil, err
	}
	if err := checkHost(src); err != nil {
		return nil, err
	}
	spec, err := openapi.Load(ctx, src, netguard.New(allow))
	if err != nil {
		return nil, fmt.Errorf("%sendpoint %s: %w", where(h.OpenAPIPos), def.Name, err)
	}
	return spec, nil
}

// where prefixes an error with the position of openapi:, when it was written in a file.
func where(p scenario.Pos) string {
	if p.File == "" {
		return ""
	}
	return p.String() + ": "
}

// specServer is the base URL of an endpoint whose document names its server; listing needs none.
func specServer(def *scenario.Endpoint, spec *openapi.Spec, listOnly bool) (string, error) {
	if len(spec.Servers) == 0 {
		if listOnly {
			return "", nil
		}
		return "", fmt.Errorf("%sendpoint %s: the document %s names no server: set url: on the endpoint (or --http-url)", where(def.HTTP.OpenAPIPos), def.Name, spec.Source)
	}
	return spec.Servers[0], nil
}

// specOperations maps the document's operations to how the endpoint calls them, and to the
// tools it lists (annotations from the method).
func specOperations(spec *openapi.Spec, base string) (map[string]endpoint.HTTPOperation, []endpoint.Tool) {
	ops := make(map[string]endpoint.HTTPOperation, len(spec.Operations))
	tools := make([]endpoint.Tool, 0, len(spec.Operations))
	for _, o := range spec.Operations {
		ops[o.Tool] = endpoint.HTTPOperation{
			Method:    o.Method,
			KeyHeader: o.KeyHeader,
			Build: func(args map[string]any) (string, any, error) {
				path, query, body := o.Split(args)
				for _, p := range o.PathParams {
					if _, ok := path[p]; !ok {
						return "", nil, fmt.Errorf("%s %s needs the path parameter %s in the arguments", o.Method, o.Path, p)
					}
				}
				return o.URL(base, path, query), body, nil
			},
		}
		tools = append(tools, specTool(o))
	}
	return ops, tools
}

// specTool is an operation as a tool: annotations from the method, and the finding when a
// mutating operation declares no idempotency key.
func specTool(o openapi.Operation) endpoint.Tool {
	t := endpoint.Tool{Name: o.Tool, Description: o.Summary, ReadOnly: o.ReadOnly, Idempotent: o.Idempotent && !o.ReadOnly,
		InputSchema: o.InputSchema, Method: o.Method, Path: o.Path, KeyHeader: o.KeyHeader}
	if o.Mutating && o.KeyHeader == "" {
		t.Finding = openapi.NoKeyDeclared
	}
	return t
}
