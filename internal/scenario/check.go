package scenario

import (
	"fmt"
	"sort"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idemtest/idemtest/internal/assert"
)

// CheckConfig is the config's check: section, what idemtest check needs beyond the endpoint:
// arguments for tools whose input schema does not say enough (or that publish none, as plain
// HTTP tools do), and the missing-key policy.
type CheckConfig struct {
	Pos Pos
	// MissingKey is the policy for a mutating call without a key: "reject" (4xx expected,
	// the default) or "accept" (reported, not judged).
	MissingKey string
	// Tools holds per-tool settings by tool name; for a plain HTTP endpoint they also name the
	// tools to check.
	Tools map[string]*CheckTool
	// KeyTTL is how long keys must be remembered (key_ttl): the expiry check retries after it.
	// 0: the expiry check is skipped.
	KeyTTL time.Duration
	// Snapshot lists the read-only calls whose answers are the server's state, read before and
	// after each retry; when set they replace the read-only tools found by listing.
	Snapshot []*CheckSnapshot
}

// CheckSnapshot is one read-only call under check.snapshot.
type CheckSnapshot struct {
	// Pos is where the tool is named.
	Pos  Pos
	Tool string
	// Args are the call's arguments: plain values, strings with {{ }} are *assert.Template.
	Args any
}

// CheckTool is one tool's entry under check.tools.
type CheckTool struct {
	Name string
	Pos  Pos
	// Args replaces the arguments synthesised from the input schema: plain values, strings with
	// {{ }} are *assert.Template ({{ session }} makes a value unique per trial).
	Args any
	// Skip, when set, leaves the tool out of the battery with this reason.
	Skip string
	// Effects counts the side effects of this trial's calls of the tool: an expression over the
	// probes and sinks (and session, trial), compiled when the config loads. EffectsPos is
	// where it was written.
	Effects    *assert.Program
	EffectsPos Pos
}

// CheckEnv is what templates in check.tools args may use.
func CheckEnv() assert.Env { return assert.Env{"session": "", "trial": 0} }

// effectsEnv is what an effects expression may use: the config's sinks and probes, session and
// trial, as in an assertion of a scenario that uses this config.
func (f *file) effectsEnv(c *config) assert.Env {
	env := CheckEnv()
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
	f.namesHint = names
	return env
}

// checkSection decodes check: {missing_key, key_ttl, snapshot, tools: {NAME: {args, skip,
// effects}}}. It runs after the config's sinks and probes are decoded: effects name them.
func (f *file) checkSection(n *yaml.Node, cfg *config) *CheckConfig {
	m, ok := f.fields(n, "check", checkFields)
	if !ok {
		return nil
	}
	c := &CheckConfig{Pos: f.pos(n), MissingKey: "reject", Tools: map[string]*CheckTool{}}
	if v := m["missing_key"]; v != nil {
		c.MissingKey = f.str(v, "check.missing_key")
		if c.MissingKey != "reject" && c.MissingKey != "accept" {
			hint := "use reject or accept"
			if s := closest(c.MissingKey, []string{"reject", "accept"}); s != "" {
				hint = "did you mean \"" + s + "\"?"
			}
			f.errf(v, hint, "check.missing_key must be reject or accept, got %q", c.MissingKey)
		}
	}
	if v := m["key_ttl"]; v != nil {
		c.KeyTTL = f.duration(v, "check.key_ttl")
	}
	if v := m["snapshot"]; v != nil {
		c.Snapshot = f.snapshots(v)
	}
	if v := m["tools"]; v != nil {
		for _, kv := range f.entries(v, "check.tools") {
			name := kv[0].Value
			tm, ok := f.fields(kv[1], "check.tools."+name, checkToolFields)
			if !ok {
				continue
			}
			t := &CheckTool{Name: name, Pos: f.pos(kv[0])}
			if a := tm["args"]; a != nil {
				if a.Kind != yaml.MappingNode {
					f.errf(a, "", "check.tools.%s.args must be a mapping of argument names to values", name)
				} else {
					t.Args = f.args(a, CheckEnv())
				}
			}
			if s := tm["skip"]; s != nil {
				t.Skip = f.str(s, "check.tools."+name+".skip")
			}
			if e := tm["effects"]; e != nil {
				what := "check.tools." + name + ".effects"
				p, err := assert.Compile(f.expression(e, what), f.effectsEnv(cfg))
				if err != nil {
					f.exprError(e, err, what)
				}
				t.Effects, t.EffectsPos = p, f.pos(e)
			}
			c.Tools[name] = t
		}
	}
	return c
}

// snapshots decodes check.snapshot: a list of {tool, args}, one entry per tool.
func (f *file) snapshots(n *yaml.Node) []*CheckSnapshot {
	if n.Kind != yaml.SequenceNode {
		f.errf(n, "snapshot: [{tool: list_refunds, args: {accountId: ...}}]", "check.snapshot must be a list of read-only calls")
		return nil
	}
	var out []*CheckSnapshot
	seen := map[string]bool{}
	for i, e := range n.Content {
		what := fmt.Sprintf("check.snapshot[%d]", i)
		m, ok := f.fields(e, what, checkSnapshotFields)
		if !ok {
			continue
		}
		s := &CheckSnapshot{}
		t := m["tool"]
		if t == nil {
			f.errf(e, "add tool: NAME (a read-only tool)", "%s has no tool", what)
			continue
		}
		s.Tool, s.Pos = f.str(t, what+".tool"), f.pos(t)
		if seen[s.Tool] {
			f.errf(t, "one entry per tool", "%s: %s is already listed", what, s.Tool)
		}
		seen[s.Tool] = true
		if a := m["args"]; a != nil {
			if a.Kind != yaml.MappingNode {
				f.errf(a, "", "%s.args must be a mapping of argument names to values", what)
			} else {
				s.Args = f.args(a, CheckEnv())
			}
		}
		out = append(out, s)
	}
	return out
}
