package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/endpoint/mcp"
	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/proc"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
)

// endpoint builds an endpoint once per run, with its templates resolved.
func (r *runner) endpoint(sc *scenario.Scenario, name string) (endpoint.Endpoint, *scenario.Endpoint, error) {
	def := sc.Endpoints[name]
	env := r.templateEnv(sc)
	allow := endpointAllowHosts(sc, def)
	cacheKey := endpointKey(def, env, allow)
	r.mu.Lock()
	defer r.mu.Unlock()
	if ep, ok := r.endpoints[cacheKey]; ok {
		return ep, def, nil
	}
	rd := endpointRender{name: name, env: env, allow: allow}
	var ep endpoint.Endpoint
	var err error
	if def.MCP != nil {
		var cfg mcp.Config
		if cfg, err = rd.mcpConfig(def); err != nil {
			return nil, def, err
		}
		ep = mcp.New(cfg)
		r.stderr[cacheKey] = cfg.Stderr
	} else if ep, err = r.httpEndpoint(def, rd); err != nil {
		return nil, def, err
	}
	r.endpoints[cacheKey] = ep
	return ep, def, nil
}

// endpointKey says which endpoint of a run a scenario's definition is. Scenarios share an
// endpoint when its definition and what its templates see are the same; a scenario that
// overrides a service the endpoint names gets its own.
func endpointKey(def *scenario.Endpoint, env map[string]any, allow []string) string {
	envKey, _ := json.Marshal(env)
	return fmt.Sprintf("%p %s %q", def, envKey, allow)
}

// templateEnv is the environment of a scenario's endpoint, service and probe settings.
func (r *runner) templateEnv(sc *scenario.Scenario) map[string]any {
	return r.svcs.TemplateEnv(sc)
}

// endpointRender evaluates the templates of one endpoint definition for a scenario, and checks
// the hosts they name against what the endpoint may reach.
type endpointRender struct {
	name  string
	env   map[string]any
	allow []string
}

func (rd endpointRender) str(t *assert.Template, what string) (string, error) {
	v, err := t.Eval(rd.env)
	if err != nil {
		return "", fmt.Errorf("endpoint %s: %s: %w", rd.name, what, err)
	}
	return assert.Text(v), nil
}

func (rd endpointRender) strs(m map[string]*assert.Template, what string) (map[string]string, error) {
	out := map[string]string{}
	for k, t := range m {
		v, err := rd.str(t, what+" "+k)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func (rd endpointRender) checkHost(url string) error {
	if herr := scenario.CheckHost(url, rd.allow); herr != nil {
		return fmt.Errorf("endpoint %s: %v; allow it with allow_hosts or --allow-host %s", rd.name, herr, herr.Host)
	}
	return nil
}

// mcpConfig renders an MCP endpoint's settings.
func (rd endpointRender) mcpConfig(def *scenario.Endpoint) (mcp.Config, error) {
	m := def.MCP
	cfg := mcp.Config{KeyArg: def.Key.Arg, KeyMeta: def.Key.Meta, Dir: m.Dir, Timeout: m.Timeout, InitTimeout: m.InitTimeout,
		Stderr: proc.NewTail(16 << 10), Policy: netguard.New(rd.allow), MaxResponseBytes: m.MaxResponseBytes}
	if m.ConflictMatch != "" {
		cfg.ConflictMatch = regexp.MustCompile(m.ConflictMatch)
	}
	var err error
	if m.URL != nil {
		if cfg.URL, err = rd.str(m.URL, "url"); err != nil {
			return cfg, err
		}
		if err := rd.checkHost(cfg.URL); err != nil {
			return cfg, err
		}
		if cfg.Headers, err = rd.strs(m.Headers, "header"); err != nil {
			return cfg, err
		}
	}
	for _, t := range m.Command {
		v, err := rd.str(t, "command")
		if err != nil {
			return cfg, err
		}
		cfg.Command = append(cfg.Command, v)
	}
	envs, err := rd.strs(m.Env, "env")
	if err != nil {
		return cfg, err
	}
	for k, v := range envs {
		cfg.Env = append(cfg.Env, k+"="+v)
	}
	return cfg, nil
}

// httpEndpoint builds an HTTP endpoint: a URL template, or the operations of an OpenAPI
// document.
func (r *runner) httpEndpoint(def *scenario.Endpoint, rd endpointRender) (endpoint.Endpoint, error) {
	var url string
	if def.HTTP.URL != nil {
		var err error
		if url, err = rd.str(def.HTTP.URL, "url"); err != nil {
			return nil, err
		}
	}
	spec, err := r.openAPI(def, rd.str, rd.checkHost, rd.allow)
	if err != nil {
		return nil, err
	}
	fromSpec := spec != nil && url == ""
	if fromSpec {
		if url, err = specServer(def, spec, r.listOnly); err != nil {
			return nil, err
		}
	}
	// Listing a document's operations sends nothing: its server is checked when called
	// (the outbound policy refuses it then).
	if !(fromSpec && r.listOnly) {
		if err := rd.checkHost(url); err != nil {
			return nil, err
		}
	}
	headers, err := rd.strs(def.HTTP.Headers, "header")
	if err != nil {
		return nil, err
	}
	cfg := endpoint.HTTPConfig{
		URL: url, Method: def.HTTP.Method, Headers: headers,
		KeyHeader: def.Key.Header, KeyArg: def.Key.Arg,
		Timeout: def.HTTP.Timeout, MaxResponseBytes: def.HTTP.MaxResponseBytes,
		Policy: netguard.New(rd.allow),
	}
	var tools []endpoint.Tool
	if spec != nil {
		cfg.Operations, tools = specOperations(spec, url)
	}
	h, err := endpoint.NewHTTP(cfg)
	if err != nil {
		return nil, fmt.Errorf("endpoint %s: %w", rd.name, err)
	}
	if spec != nil {
		return &endpoint.ListedHTTP{HTTP: h, List: tools}, nil
	}
	return h, nil
}

// mutating decides whether a tool gets a key. Without a mutating list, an endpoint that can list
// its tools decides by annotations (every tool not marked readOnlyHint), and an unknown tool is
// an error that names the tools the server has.
func (r *runner) mutating(ctx context.Context, ep endpoint.Endpoint, def *scenario.Endpoint, tool string) (bool, error) {
	lister, ok := ep.(endpoint.ToolLister)
	if !ok {
		return Mutating(def, tool, nil), nil
	}
	tools, err := lister.Tools(ctx)
	if err != nil {
		return false, err
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		if t.Name == tool {
			return Mutating(def, tool, &t), nil
		}
		names = append(names, t.Name)
	}
	return false, fmt.Errorf("endpoint %s has no tool %q; its tools: %s", def.Name, tool, strings.Join(names, ", "))
}

// mcpTails are the standard errors of the scenario's stdio MCP servers started so far, by
// endpoint name.
func (r *runner) mcpTails(sc *scenario.Scenario) map[string]*proc.Tail {
	env := r.templateEnv(sc)
	r.mu.Lock()
	defer r.mu.Unlock()
	tails := map[string]*proc.Tail{}
	for name, def := range sc.Endpoints {
		if w := r.stderr[endpointKey(def, env, endpointAllowHosts(sc, def))]; w != nil {
			tails[name] = w
		}
	}
	return tails
}

// mcpStderr adds what the scenario's stdio MCP servers wrote to standard error since the marks
// to a failure. A server started during the trial has no mark: all it wrote counts.
func (r *runner) mcpStderr(sc *scenario.Scenario, marks map[string]int64, f *result.Failure) {
	for name, w := range r.mcpTails(sc) {
		if out := strings.TrimSpace(w.Since(marks[name])); out != "" {
			if f.ServiceOutput == nil {
				f.ServiceOutput = map[string]string{}
			}
			f.ServiceOutput["mcp "+name] = proc.LastBytes(out, serviceTail)
		}
	}
}

func (r *runner) closeEndpoints() {
	for _, ep := range r.endpoints {
		ep.Close()
	}
}
