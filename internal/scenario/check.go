package scenario

import (
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
}

// CheckEnv is what templates in check.tools args may use.
func CheckEnv() assert.Env { return assert.Env{"session": "", "trial": 0} }

// checkFields decodes check: {missing_key, tools: {NAME: {args, skip}}}.
func (f *file) checkSection(n *yaml.Node) *CheckConfig {
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
			c.Tools[name] = t
		}
	}
	return c
}
