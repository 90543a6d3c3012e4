package decode

import (
	"context"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/schema"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// file is one YAML file being decoded into the model: yamlfile's positions, errors and scalar
// decoders, and the references its sections leave to check once all of them are known.
type file struct {
	*yamlfile.File
	// ctx ends what decoding reads besides the file (an endpoint's OpenAPI document).
	ctx context.Context
	// serviceRefs are services.NAME references, checked once the scenario's services are known.
	serviceRefs []serviceUse
	// sinkRefs are sinks.NAME references in config templates.
	sinkRefs []serviceUse
	// observed are the sinks (maps) and probes (dynamic) assertions may use, by name.
	observed map[string]any
	// env is the steps' expression environment as of the first envSteps steps (stepEnv), with
	// its names in declaration order for hints.
	env      assert.Env
	envNames []string
	envSteps int
}

// fields decodes n as a mapping of sec's keys; what names it in errors.
func (f *file) fields(n *yaml.Node, what string, sec schema.Section) (map[string]*yaml.Node, bool) {
	return f.Mapping(n, what, sec.Names()...)
}

// checkURL reports a URL field that CheckURL refuses, at its position.
func (f *file) checkURL(n *yaml.Node, what string) {
	if n == nil || n.Kind != yaml.ScalarNode {
		return
	}
	if err := scenario.CheckURL(n.Value); err != nil {
		hint := "write a full URL such as http://127.0.0.1:8080/tools/{tool}"
		if empty := f.EmptyVars(n); len(empty) == 1 {
			hint = fmt.Sprintf("%s is set but empty in the environment; %s", empty[0], hint)
		} else if len(empty) > 1 {
			hint = fmt.Sprintf("%s are set but empty in the environment; %s", strings.Join(empty, ", "), hint)
		}
		f.Errf(n, hint, "%s: %v", what, err)
	}
}

// ConfigFile is a decoded idemtest.yaml: what the scenarios that use it inherit.
type ConfigFile struct {
	Path string
	// Endpoint is the default endpoint of call steps that name none.
	Endpoint    string
	EndpointPos scenario.Pos
	Endpoints   map[string]*scenario.Endpoint
	Services    map[string]*scenario.Service
	Sinks       map[string]*scenario.Sink
	Probes      map[string]*scenario.Probe
	AllowHosts  []string
	Check       *scenario.CheckConfig
	Coverage    *scenario.CoverageConfig
	Audit       *scenario.AuditConfig
	// Secrets are the secrets the file holds (see yamlfile.File.Secrets).
	Secrets *redact.Secrets
}

// Config decodes the idemtest.yaml read into yf, whose document is root (nil when the
// file could not be parsed). Every problem is added to yf.Errs. Reads of other documents
// (OpenAPI) end with ctx.
func Config(ctx context.Context, yf *yamlfile.File, root *yaml.Node) *ConfigFile {
	f := &file{File: yf, ctx: ctx}
	c := &ConfigFile{Path: f.Path, Secrets: &f.Secrets}
	if root == nil {
		return c
	}
	m, ok := f.fields(root, "config", schema.Config)
	if !ok {
		return c
	}
	if n := m["endpoint"]; n != nil {
		c.Endpoint, c.EndpointPos = f.Str(n, "endpoint"), f.Pos(n)
	}
	f.sections(m, c)
	if n := m["check"]; n != nil {
		c.Check = f.checkSection(n, c)
	}
	if n := m["coverage"]; n != nil {
		c.Coverage = f.coverageSection(n)
	}
	if n := m["audit"]; n != nil {
		c.Audit = f.auditSection(n)
	}
	f.checkRefs(c.Services, c.Sinks)
	return c
}

// Scenario decodes the scenario file read into yf, whose document is root, on top of cfg
// (nil without a config): the scenario's own endpoints, services, sinks and probes override the
// config's by name, and its allowed hosts are its own, the config's and allowHosts
// (--allow-host). Every problem is added to yf.Errs; the result is nil when root is not a
// mapping. What needs the whole scenario (step ids, references, hosts) is left to the caller.
// Reads of other documents (OpenAPI) end with ctx.
func Scenario(ctx context.Context, yf *yamlfile.File, root *yaml.Node, cfg *ConfigFile, allowHosts []string) *scenario.Scenario {
	f := &file{File: yf, ctx: ctx}
	m, ok := f.fields(root, "scenario", schema.Scenario)
	if !ok {
		return nil
	}
	s := &scenario.Scenario{File: f.Path, Pos: f.Pos(root), Trials: 1, Secrets: &f.Secrets}
	if n := m["name"]; n != nil {
		s.Name = f.Str(n, "name")
	}
	if s.Name == "" && (m["name"] == nil || m["name"].Tag != "!!null") {
		f.Errf(root, "add name: a sentence saying what the scenario proves", "scenario has no name")
	}
	if n := m["tags"]; n != nil {
		s.Tags = f.Strings(n, "tags")
	}
	if n := m["trials"]; n != nil {
		s.Trials = f.Int(n, "trials", 1, scenario.MaxTrials)
	}
	if n := m["endpoint"]; n != nil {
		s.Endpoint = f.Str(n, "endpoint")
		s.EndpointPos = f.Pos(n)
	}
	own := &ConfigFile{}
	f.sections(m, own)
	hosts := own.AllowHosts
	if cfg == nil {
		cfg = &ConfigFile{}
	}
	s.Config = cfg.Path
	s.Coverage = cfg.Coverage
	s.Secrets.Merge(cfg.Secrets)
	if s.Endpoint == "" && cfg.Endpoint != "" {
		s.Endpoint, s.EndpointPos = cfg.Endpoint, cfg.EndpointPos
	}
	s.Endpoints = merge(cfg.Endpoints, own.Endpoints)
	s.Services = merge(cfg.Services, own.Services)
	s.Sinks = merge(cfg.Sinks, own.Sinks)
	s.Probes = merge(cfg.Probes, own.Probes)
	hosts = append(hosts, cfg.AllowHosts...)
	f.observed = map[string]any{}
	for name := range s.Sinks {
		f.observed[name] = map[string]any{}
	}
	for name := range s.Probes {
		f.observed[name] = assert.Dynamic
	}
	hosts = append(hosts, allowHosts...)
	s.AllowHosts = hosts
	f.checkRefs(s.Services, s.Sinks)

	if n := m["steps"]; n == nil {
		f.Errf(root, "add steps: with call_tool and assert steps", "scenario has no steps")
	} else if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		f.Errf(n, "steps is a list: - call_tool: NAME", "steps must be a non-empty list")
	} else {
		for i, sn := range n.Content {
			if st := f.step(s, i, sn); st != nil {
				s.Steps = append(s.Steps, st)
			}
		}
	}
	return s
}

// Stepless returns the scenario of a config alone, for commands that talk to an endpoint
// without a scenario: no steps, and the config's endpoints, services, sinks, probes and check
// section (none when c is nil), with allowHosts (--allow-host) besides the config's.
func Stepless(c *ConfigFile, allowHosts []string) *scenario.Scenario {
	s := &scenario.Scenario{Trials: 1, Endpoints: map[string]*scenario.Endpoint{}, Services: map[string]*scenario.Service{}, AllowHosts: allowHosts, Secrets: &redact.Secrets{}}
	if c != nil {
		s.Secrets = c.Secrets
		s.Config, s.File = c.Path, c.Path
		s.Endpoints, s.Services = merge(c.Endpoints, nil), merge(c.Services, nil)
		s.Sinks, s.Probes, s.Check = merge(c.Sinks, nil), merge(c.Probes, nil), c.Check
		s.Coverage, s.Audit = c.Coverage, c.Audit
		s.AllowHosts = append(s.AllowHosts, c.AllowHosts...)
	}
	return s
}

// sections decodes the parts a config and a scenario share.
func (f *file) sections(m map[string]*yaml.Node, c *ConfigFile) {
	source := f.Path
	if n := m["allow_hosts"]; n != nil {
		c.AllowHosts = f.Strings(n, "allow_hosts")
	}
	if n := m["secrets"]; n != nil {
		f.AddSecretVars(n)
	}
	if n := m["endpoints"]; n != nil {
		c.Endpoints = map[string]*scenario.Endpoint{}
		for _, kv := range f.Entries(n, "endpoints") {
			if ep := f.endpoint(kv[0].Value, kv[1]); ep != nil {
				c.Endpoints[ep.Name] = ep
			}
		}
	}
	if n := m["services"]; n != nil {
		c.Services = map[string]*scenario.Service{}
		for _, kv := range f.Entries(n, "services") {
			if s := f.service(kv[0].Value, kv[1], source); s != nil {
				c.Services[s.Name] = s
			}
		}
	}
	if n := m["sinks"]; n != nil {
		c.Sinks = map[string]*scenario.Sink{}
		for _, kv := range f.Entries(n, "sinks") {
			if s := f.sink(kv[0], kv[1], source); s != nil {
				c.Sinks[s.Name] = s
			}
		}
	}
	if n := m["probes"]; n != nil {
		c.Probes = map[string]*scenario.Probe{}
		for _, kv := range f.Entries(n, "probes") {
			if p := f.probe(kv[0], kv[1], source); p != nil {
				c.Probes[p.Name] = p
			}
		}
	}
}

// merge returns a's entries overridden by b's.
func merge[T any](a, b map[string]T) map[string]T {
	out := map[string]T{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
