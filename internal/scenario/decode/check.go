package decode

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/schema"
)

// effectsEnv is what an effects expression may use: the config's sinks and probes, session and
// trial, as in an assertion of a scenario that uses this config.
func (f *file) effectsEnv(c *ConfigFile) assert.Env {
	env := scenario.CheckEnv()
	names := []string{"session", "trial"}
	for name := range c.Sinks {
		env[name] = map[string]any{}
		names = append(names, name)
	}
	for name := range c.Probes {
		env[name] = assert.Dynamic
		names = append(names, name)
	}
	sort.Strings(names)
	f.NamesHint = names
	return env
}

// checkSection decodes check: {missing_key, key_ttl, snapshot, tools: {NAME: {args, skip,
// effects}}}. It runs after the config's sinks and probes are decoded: effects name them.
func (f *file) checkSection(n *yaml.Node, cfg *ConfigFile) *scenario.CheckConfig {
	m, ok := f.fields(n, "check", schema.Check)
	if !ok {
		return nil
	}
	c := &scenario.CheckConfig{Pos: f.Pos(n), MissingKey: "reject", Tools: map[string]*scenario.CheckTool{}}
	if v := m["missing_key"]; v != nil {
		c.MissingKey = f.Str(v, "check.missing_key")
		if c.MissingKey != "reject" && c.MissingKey != "accept" {
			hint := "use reject or accept"
			if s := assert.Closest(c.MissingKey, []string{"reject", "accept"}); s != "" {
				hint = "did you mean \"" + s + "\"?"
			}
			f.Errf(v, hint, "check.missing_key must be reject or accept, got %q", c.MissingKey)
		}
	}
	if v := m["key"]; v != nil {
		if km, ok := f.fields(v, "check.key", schema.CheckKey); ok {
			if km["format"] == nil {
				f.Errf(v, "key: {format: uuid} (or uuidv7, ulid, a template with {random} and a length)", "check.key needs a format")
			} else {
				kf := f.keyFormat(km, "check.key")
				c.Key, c.KeyPos = &kf, f.Pos(v)
			}
		}
	}
	if v := m["key_ttl"]; v != nil {
		c.KeyTTL = f.Duration(v, "check.key_ttl")
	}
	if v := m["snapshot"]; v != nil {
		c.Snapshot = f.snapshots(v)
	}
	if v := m["tools"]; v != nil {
		for _, kv := range f.Entries(v, "check.tools") {
			name := kv[0].Value
			tm, ok := f.fields(kv[1], "check.tools."+name, schema.CheckTool)
			if !ok {
				continue
			}
			t := &scenario.CheckTool{Name: name, Pos: f.Pos(kv[0])}
			if a := tm["args"]; a != nil {
				if a.Kind != yaml.MappingNode {
					f.Errf(a, "", "check.tools.%s.args must be a mapping of argument names to values", name)
				} else {
					t.Args = f.args(a, scenario.CheckEnv())
				}
			}
			if s := tm["skip"]; s != nil {
				t.Skip = f.Str(s, "check.tools."+name+".skip")
			}
			if e := tm["effects"]; e != nil {
				what := "check.tools." + name + ".effects"
				p, err := assert.Compile(f.Expression(e, what), f.effectsEnv(cfg))
				if err != nil {
					f.ExprError(e, err, what)
				}
				t.Effects, t.EffectsPos = p, f.Pos(e)
			}
			c.Tools[name] = t
		}
	}
	return c
}

// snapshots decodes check.snapshot: a list of {tool, args}, one entry per tool.
func (f *file) snapshots(n *yaml.Node) []*scenario.CheckSnapshot {
	if n.Kind != yaml.SequenceNode {
		f.Errf(n, "snapshot: [{tool: list_refunds, args: {accountId: ...}}]", "check.snapshot must be a list of read-only calls")
		return nil
	}
	var out []*scenario.CheckSnapshot
	seen := map[string]bool{}
	for i, e := range n.Content {
		what := fmt.Sprintf("check.snapshot[%d]", i)
		m, ok := f.fields(e, what, schema.CheckSnapshot)
		if !ok {
			continue
		}
		s := &scenario.CheckSnapshot{}
		t := m["tool"]
		if t == nil {
			f.Errf(e, "add tool: NAME (a read-only tool)", "%s has no tool", what)
			continue
		}
		s.Tool, s.Pos = f.Str(t, what+".tool"), f.Pos(t)
		if seen[s.Tool] {
			f.Errf(t, "one entry per tool", "%s: %s is already listed", what, s.Tool)
		}
		seen[s.Tool] = true
		if a := m["args"]; a != nil {
			if a.Kind != yaml.MappingNode {
				f.Errf(a, "", "%s.args must be a mapping of argument names to values", what)
			} else {
				s.Args = f.args(a, scenario.CheckEnv())
			}
		}
		out = append(out, s)
	}
	return out
}

// coverageSection decodes the config's coverage: section: exempt maps a mutating tool to the
// reason --require-coverage does not ask for it, which must be given.
func (f *file) coverageSection(n *yaml.Node) *scenario.CoverageConfig {
	m, ok := f.fields(n, "coverage", schema.Coverage)
	if !ok {
		return nil
	}
	c := &scenario.CoverageConfig{Pos: f.Pos(n), Exempt: map[string]string{}}
	if v := m["exempt"]; v != nil {
		for _, kv := range f.Entries(v, "coverage.exempt") {
			reason := f.Str(kv[1], "coverage.exempt."+kv[0].Value)
			if strings.TrimSpace(reason) == "" {
				f.Errf(kv[1], "say why the tool needs no scenario: {"+kv[0].Value+": tested by the payments suite}", "coverage.exempt.%s has no reason", kv[0].Value)
				continue
			}
			c.Exempt[kv[0].Value] = reason
		}
	}
	return c
}

// auditSection decodes the config's audit: section. A rate is 5%, 0.05 or off; execution_span
// is a glob of span names.
func (f *file) auditSection(n *yaml.Node) *scenario.AuditConfig {
	m, ok := f.fields(n, "audit", schema.Audit)
	if !ok {
		return nil
	}
	a := &scenario.AuditConfig{Pos: f.Pos(n)}
	names := func(v *yaml.Node, name string) []string {
		if v == nil {
			return nil
		}
		out := f.Strings(v, "audit."+name)
		if len(out) == 0 && v.Kind == yaml.SequenceNode {
			f.Errf(v, "name one or more, or leave audit."+name+" out for the default", "audit.%s is empty", name)
		}
		return out
	}
	a.KeyArgs = names(m["key_args"], "key_args")
	a.KeyAttrs = names(m["key_attrs"], "key_attrs")
	a.SessionAttrs = names(m["session_attrs"], "session_attrs")
	a.ReplayAttrs = names(m["replay_attrs"], "replay_attrs")
	a.Mutating = names(m["mutating"], "mutating")
	a.Natural = names(m["natural"], "natural")
	if v := m["execution_span"]; v != nil {
		a.ExecutionSpan = f.Str(v, "audit.execution_span")
		if _, err := path.Match(a.ExecutionSpan, ""); err != nil {
			f.Errf(v, "a glob of span names, such as refund.execute or db.*", "audit.execution_span %q: %v", a.ExecutionSpan, err)
		}
	}
	if v := m["ttl"]; v != nil {
		a.TTL = f.Duration(v, "audit.ttl")
	}
	if v := m["window"]; v != nil {
		a.Window = f.Duration(v, "audit.window")
		if a.TTL > 0 && a.Window > 0 && a.Window < a.TTL {
			f.Errf(v, "make it at least audit.ttl: a key must be remembered while it lives", "audit.window %s is shorter than audit.ttl %s", a.Window, a.TTL)
		}
	}
	rate := func(v *yaml.Node, name string) (float64, bool) {
		if v == nil {
			return 0, false
		}
		r, err := scenario.ParseRate(f.Str(v, "audit."+name))
		if err != nil {
			f.Errf(v, "write a share such as 5% or 0.05, or off", "audit.%s: %v", name, err)
			return 0, false
		}
		return r, true
	}
	a.MaxHitRate, a.MaxHitRateSet = rate(m["max_hit_rate"], "max_hit_rate")
	a.MaxConflictRate, a.MaxConflictRateSet = rate(m["max_conflict_rate"], "max_conflict_rate")
	return a
}
