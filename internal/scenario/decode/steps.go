package decode

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/schema"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// step decodes one step of either form.
func (f *file) step(s *scenario.Scenario, i int, n *yaml.Node) *scenario.Step {
	if n.Kind != yaml.MappingNode {
		f.Errf(n, "a step is a mapping such as - call_tool: issue_refund", "step %d must be a mapping, got %s", i+1, yamlfile.KindName(n))
		return nil
	}
	n = f.seedStep(n)
	if n == nil {
		return nil
	}
	st := &scenario.Step{Index: i, ID: fmt.Sprintf("step%d", i+1), Pos: f.Pos(n)}
	has := func(k string) bool {
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == k {
				return true
			}
		}
		return false
	}
	kinds := 0
	for _, k := range []string{"assert", "sleep"} {
		if has(k) {
			kinds++
		}
	}
	if has("call_tool") || has("retry_of") {
		kinds++
	}
	switch {
	case kinds == 0:
		f.Errf(n, "each step has exactly one of call_tool, assert or sleep", "step %d is neither a call, an assertion nor a sleep", i+1)
		return nil
	case kinds > 1:
		f.Errf(n, "each step has exactly one of call_tool, assert or sleep: split it into steps", "step %d is more than one of a call, an assertion and a sleep", i+1)
		return nil
	}
	var env assert.Env
	switch {
	case has("assert"):
		st.Kind = scenario.AssertStep
		m, _ := f.fields(n, "assert step", schema.AssertStep)
		f.stepID(st, m)
		env = f.stepEnv(s, st)
		if x := m["assert"]; x != nil {
			st.Pos = f.Pos(x)
			src := f.Expression(x, "assert")
			p, err := assert.Compile(src, env)
			if err != nil {
				f.ExprError(x, err, "assert")
			} else {
				f.checkRoutes(s, x, p.Members(), 0)
			}
			st.Assert = p
		}
		if x := m["eventually"]; x != nil {
			st.Eventually = f.Duration(x, "eventually")
		}
	case has("sleep"):
		st.Kind = scenario.SleepStep
		m, _ := f.fields(n, "sleep step", schema.SleepStep)
		f.stepID(st, m)
		st.Sleep = f.Duration(m["sleep"], "sleep")
	default:
		st.Kind = scenario.CallStep
		m, _ := f.fields(n, "call step", schema.CallStep)
		f.stepID(st, m)
		env = f.stepEnv(s, st)
		f.callStep(st, m, env)
	}
	return st
}

// seedStep rewrites the hosted-runner form (action/tool/check) into the native one, keeping
// every node and so every position.
func (f *file) seedStep(n *yaml.Node) *yaml.Node {
	var action *yaml.Node
	for j := 0; j+1 < len(n.Content); j += 2 {
		if n.Content[j].Value == "action" {
			action = n.Content[j+1]
		}
	}
	if action == nil {
		return n
	}
	rename := map[string]string{}
	switch action.Value {
	case "call_tool":
		rename["tool"] = "call_tool"
	case "assert":
		rename["check"] = "assert"
	case "sleep":
		rename["duration"] = "sleep"
	default:
		hint := "action is call_tool, assert or sleep"
		if c := assert.Closest(action.Value, []string{"call_tool", "assert", "sleep"}); c != "" {
			hint = fmt.Sprintf("did you mean %q?", c)
		}
		f.Errf(action, hint, "unknown action %q", action.Value)
		return nil
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Line: n.Line, Column: n.Column}
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		if k.Value == "action" {
			continue
		}
		if to, ok := rename[k.Value]; ok {
			k2 := *k
			k2.Value = to
			k = &k2
		}
		out.Content = append(out.Content, k, v)
	}
	// Each action needs the key its step kind is named by, under its seed name.
	need := map[string]struct{ key, seed, hint string }{
		"call_tool": {"call_tool", "tool", "add tool: NAME"},
		"assert":    {"assert", "check", "add check: EXPRESSION"},
		"sleep":     {"sleep", "duration", "add duration: 500ms"},
	}[action.Value]
	if !hasKey(out, need.key) {
		f.Errf(n, need.hint, "action: %s needs %s:", action.Value, need.seed)
		return nil
	}
	return out
}

func hasKey(n *yaml.Node, k string) bool {
	for j := 0; j+1 < len(n.Content); j += 2 {
		if n.Content[j].Value == k {
			return true
		}
	}
	return false
}

var idPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// nameUsable reports whether name, which assertions will use, is free of expr's keywords and,
// for a dynamic name (a probe), of its built-ins, and if not says so at n: a probe named keys
// would otherwise mean keys(), and its assertion fail with a type error far from the name.
func (f *file) nameUsable(n *yaml.Node, what, name string, dynamic bool) bool {
	why := assert.Shadows(name, dynamic)
	if why == "" {
		return true
	}
	f.Errf(n, fmt.Sprintf("choose another name, such as %s_%s", what[strings.LastIndex(what, " ")+1:], name),
		"%s %q is %s: assertions could not name it", what, name, why)
	return false
}

func (f *file) stepID(st *scenario.Step, m map[string]*yaml.Node) {
	if x := m["id"]; x != nil {
		id := f.Str(x, "id")
		if !idPattern.MatchString(id) {
			f.Errf(x, "ids are names usable in assertions: letters, digits and _", "invalid step id %q", id)
			return
		}
		switch id {
		case "session", "trial", "uuid", "now":
			f.Errf(x, "choose another id", "step id %q is a built-in name", id)
			return
		}
		if !f.nameUsable(x, "step id", id, false) {
			return
		}
		if _, taken := f.observed[id]; taken {
			f.Errf(x, "choose another id", "step id %q is already the name of a sink or probe", id)
			return
		}
		st.ID = id
		st.Pos = f.Pos(x)
	}
}

// stepEnv is what a step's expressions may use: earlier steps, session and trial. A call step's
// result is typed (assert.CallResult, or assert.FanoutResult for a fan-out), so a field typo is
// a load error; the runner fills in the same types.
//
// The environment grows with the steps decoded so far instead of being rebuilt for each step,
// so that loading n steps is linear in n. The map is shared by every step's compile, which only
// reads it.
func (f *file) stepEnv(s *scenario.Scenario, _ *scenario.Step) assert.Env {
	if f.env == nil {
		f.env = assert.Env{"session": "", "trial": 0}
		f.envNames = []string{"session", "trial"}
		for _, name := range slices.Sorted(maps.Keys(f.observed)) {
			f.env[name] = f.observed[name]
			f.envNames = append(f.envNames, name)
		}
	}
	for _, prev := range s.Steps[f.envSteps:] {
		if prev.Kind == scenario.CallStep {
			f.env[prev.ID] = assert.CallResult{}
			if prev.Fanout > 1 {
				f.env[prev.ID] = assert.FanoutResult{}
			}
			f.envNames = append(f.envNames, prev.ID)
		}
	}
	f.envSteps = len(s.Steps)
	f.NamesHint = f.envNames[:len(f.envNames):len(f.envNames)]
	return f.env
}
