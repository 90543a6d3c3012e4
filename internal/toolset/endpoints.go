package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/endpoint/mcp"
	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/proc"
	"github.com/idemtest/idemtest/internal/scenario"
)

// Set builds the endpoints a run's scenarios call, each once per definition, template
// environment and allowed hosts, and keeps them (and the standard error of each stdio MCP
// server) until Close. It is safe for concurrent use.
type Set struct {
	// ListOnly is set when endpoints are built to list their tools, not to call them: an
	// OpenAPI document needs no server then. Set it before the first Get.
	ListOnly bool

	// ctx is the run's: the first signal cancels what building an endpoint reads (an OpenAPI
	// document fetched from its URL). A Set lives as long as that run.
	ctx   context.Context
	env   func(*scenario.Scenario) map[string]any
	mu    sync.Mutex
	built map[string]endpoint.Endpoint
	// stderr holds the standard error of each stdio MCP server, by the key of its endpoint in
	// built (scenarios that define an endpoint of one name differently have servers, and
	// standard errors, of their own).
	stderr map[string]*proc.Tail
}

// New returns an empty Set for the run of ctx; env gives a scenario's template environment (its
// services and sinks), which the endpoints' templates are rendered in.
func New(ctx context.Context, env func(*scenario.Scenario) map[string]any) *Set {
	return &Set{ctx: ctx, env: env, built: map[string]endpoint.Endpoint{}, stderr: map[string]*proc.Tail{}}
}

// Get returns the endpoint of sc called name, and its definition. The endpoint is built on
// first use: its templates rendered, the hosts they name checked, an OpenAPI document read.
func (s *Set) Get(sc *scenario.Scenario, name string) (endpoint.Endpoint, *scenario.Endpoint, error) {
	def := sc.Endpoints[name]
	env := s.env(sc)
	allow := allowHosts(sc, def)
	cacheKey := endpointKey(def, env, allow)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ep, ok := s.built[cacheKey]; ok {
		return ep, def, nil
	}
	variants := instances(def, endpointRender{name: name, env: env, allow: allow})
	if len(variants) == 1 {
		ep, err := s.build(variants[0].def, variants[0].rd, cacheKey)
		if err != nil {
			return nil, def, err
		}
		s.built[cacheKey] = ep
		return ep, def, nil
	}
	members := make([]endpoint.Endpoint, 0, len(variants))
	named := make([]endpoint.Instance, 0, len(variants))
	for i, v := range variants {
		// The first instance's standard error is the endpoint's, for reports.
		key := cacheKey
		if i > 0 {
			key = fmt.Sprintf("%s#%d", cacheKey, i+1)
		}
		ep, err := s.build(v.def, v.rd, key)
		if err != nil {
			for _, m := range members {
				m.Close()
			}
			return nil, def, err
		}
		members = append(members, ep)
		named = append(named, endpoint.Instance{Index: i + 1, URL: v.address})
	}
	ep := endpoint.NewReplicas(members, named)
	s.built[cacheKey] = ep
	return ep, def, nil
}

// build builds one endpoint (one instance) from its definition, rendered by rd.
func (s *Set) build(def *scenario.Endpoint, rd endpointRender, key string) (endpoint.Endpoint, error) {
	if def.MCP != nil {
		cfg, err := rd.mcpConfig(def)
		if err != nil {
			return nil, err
		}
		s.stderr[key] = cfg.Stderr
		return mcp.New(cfg), nil
	}
	return s.httpEndpoint(def, rd)
}

// variant is one instance of an endpoint: the definition and rendering that build it, and the
// address that names it.
type variant struct {
	def     *scenario.Endpoint
	rd      endpointRender
	address string
}

// instances returns the instances of an endpoint: one per entry of its urls:, one per replica
// of a service its URL (or stdio command) names, or the endpoint alone. An instance of a
// replicated service sees that replica as services.NAME.
func instances(def *scenario.Endpoint, rd endpointRender) []variant {
	one := []variant{{def: def, rd: rd}}
	var urls []*assert.Template
	switch {
	case def.HTTP != nil:
		urls = def.HTTP.URLs
	case def.MCP != nil:
		urls = def.MCP.URLs
	}
	if len(urls) > 0 {
		out := make([]variant, len(urls))
		for i, u := range urls {
			d := *def
			if def.HTTP != nil {
				h := *def.HTTP
				h.URL, h.URLs = u, nil
				d.HTTP = &h
			} else {
				m := *def.MCP
				m.URL, m.URLs = u, nil
				d.MCP = &m
			}
			r := rd
			r.name = fmt.Sprintf("%s (instance %d)", rd.name, i+1)
			addr, _ := r.str(u, "url")
			out[i] = variant{def: &d, rd: r, address: addr}
		}
		return out
	}
	envs := replicaEnvs(rd.env)
	if envs == nil {
		return one
	}
	out := make([]variant, len(envs))
	distinct := map[string]bool{}
	for i, env := range envs {
		r := rd
		r.env = env
		r.name = fmt.Sprintf("%s (instance %d)", rd.name, i+1)
		addr, err := address(def, r)
		if err != nil {
			// The single endpoint's build reports it.
			return one
		}
		distinct[addr] = true
		out[i] = variant{def: def, rd: r, address: addr}
	}
	if len(distinct) < 2 {
		// The endpoint names no replicated service: its instances would all be one server.
		return one
	}
	return out
}

// address renders what names an instance: its URL, or its stdio command line.
func address(def *scenario.Endpoint, rd endpointRender) (string, error) {
	var ts []*assert.Template
	switch {
	case def.HTTP != nil:
		ts = []*assert.Template{def.HTTP.URL}
	case def.MCP != nil && def.MCP.URL != nil:
		ts = []*assert.Template{def.MCP.URL}
	case def.MCP != nil:
		ts = def.MCP.Command
	}
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		if t == nil {
			continue
		}
		v, err := rd.str(t, "url")
		if err != nil {
			return "", err
		}
		parts = append(parts, v)
	}
	return strings.Join(parts, " "), nil
}

// replicaEnvs returns, when a service of env has replicas, one environment per replica in
// which services.NAME is that replica of each such service; nil when none has.
func replicaEnvs(env map[string]any) []map[string]any {
	svcs, _ := env["services"].(map[string]any)
	n := 0
	for _, v := range svcs {
		if m, ok := v.(map[string]any); ok {
			if l, ok := m["replicas"].([]any); ok {
				n = max(n, len(l))
			}
		}
	}
	if n < 2 {
		return nil
	}
	out := make([]map[string]any, n)
	for i := range n {
		e := maps.Clone(env)
		s := make(map[string]any, len(svcs))
		for name, v := range svcs {
			s[name] = v
			if m, ok := v.(map[string]any); ok {
				if l, ok := m["replicas"].([]any); ok && len(l) > 0 {
					s[name] = l[i%len(l)]
				}
			}
		}
		e["services"] = s
		out[i] = e
	}
	return out
}

// endpointKey says which endpoint of a run a scenario's definition is. Scenarios share an
// endpoint when its definition and what its templates see are the same; a scenario that
// overrides a service the endpoint names gets its own.
func endpointKey(def *scenario.Endpoint, env map[string]any, allow []string) string {
	envKey, _ := json.Marshal(env)
	return fmt.Sprintf("%p %s %q", def, envKey, allow)
}

// allowHosts is what an endpoint may connect to beyond loopback: the scenario's, the config's
// and --allow-host's hosts, and the endpoint's own.
func allowHosts(sc *scenario.Scenario, def *scenario.Endpoint) []string {
	out := make([]string, 0, len(sc.AllowHosts)+len(def.AllowHosts))
	return append(append(out, sc.AllowHosts...), def.AllowHosts...)
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
		return fmt.Errorf("endpoint %s: %w; allow it with allow_hosts or --allow-host %s", rd.name, herr, herr.Host)
	}
	return nil
}

// mcpConfig renders an MCP endpoint's settings.
func (rd endpointRender) mcpConfig(def *scenario.Endpoint) (mcp.Config, error) {
	m := def.MCP
	cfg := mcp.Config{KeyArg: def.Key.Arg, KeyMeta: def.Key.Meta, Dir: m.Dir, Timeout: m.Timeout, InitTimeout: m.InitTimeout,
		Stderr: proc.NewTail(16 << 10), Policy: netguard.New(rd.allow), MaxResponseBytes: m.MaxResponseBytes,
		Refusals: RefusalsOf(def), ConflictMatch: m.ConflictMatch}
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
func (s *Set) httpEndpoint(def *scenario.Endpoint, rd endpointRender) (endpoint.Endpoint, error) {
	var url string
	if def.HTTP.URL != nil {
		var err error
		if url, err = rd.str(def.HTTP.URL, "url"); err != nil {
			return nil, err
		}
	}
	spec, err := openAPI(s.ctx, def, rd.str, rd.checkHost, rd.allow)
	if err != nil {
		return nil, err
	}
	fromSpec := spec != nil && url == ""
	if fromSpec {
		if url, err = specServer(def, spec, s.ListOnly); err != nil {
			return nil, err
		}
	}
	// Listing a document's operations sends nothing: its server is checked when called
	// (the outbound policy refuses it then).
	if !(fromSpec && s.ListOnly) {
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
		Policy: netguard.New(rd.allow), Refusals: RefusalsOf(def),
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

// Stderr gives the standard error of the scenario's stdio MCP servers started so far, by
// endpoint name.
func (s *Set) Stderr(sc *scenario.Scenario) map[string]*proc.Tail {
	env := s.env(sc)
	s.mu.Lock()
	defer s.mu.Unlock()
	tails := map[string]*proc.Tail{}
	for name, def := range sc.Endpoints {
		if w := s.stderr[endpointKey(def, env, allowHosts(sc, def))]; w != nil {
			tails[name] = w
		}
	}
	return tails
}

// Close closes every endpoint built (a stdio MCP server is stopped).
func (s *Set) Close() {
	for _, ep := range s.built {
		ep.Close()
	}
}

// RefusalsOf is what an endpoint refuses a call with beside an error status or isError: the
// usual error-shaped successes and those its refusal: declares.
func RefusalsOf(def *scenario.Endpoint) endpoint.Refusals {
	r := endpoint.Refusals{}
	for _, s := range def.Refusal {
		r.Declared = append(r.Declared, endpoint.Shape(s))
	}
	return r
}
