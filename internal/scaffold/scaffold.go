package scaffold

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/check/synth"
	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/scenario"
)

// Options say how the generated scenario reaches the tool.
type Options struct {
	Endpoint string
	// KeyArg is the argument that carries the key, left out of the generated arguments.
	KeyArg string
	// Fanout is the burst's size (default 8).
	Fanout int
	// Trials is how many times the steps run, a fresh session each (default 10: a check-then-act
	// window is hit in some trials, not all).
	Trials int
}

// arg is one generated argument, whether it is a placeholder to be filled in, and another
// value of the same kind for the key-reuse step.
type arg struct {
	name  string
	value any
	todo  bool
	alt   any
}

// sessionScoped is a string argument that gets the trial's session appended, so that reruns and
// trials never find what an earlier one left on the server (an account already refunded).
type sessionScoped string

func (s sessionScoped) String() string { return string(s) + "_{{ session }}" }

// exampleArgs derives example arguments from an input schema: required properties (all properties
// when none is required), each the value its schema gives (synth.Given), else a value or a
// placeholder of its type, marked todo.
func exampleArgs(schema map[string]any, keyArg string) []arg {
	props, _ := schema["properties"].(map[string]any)
	required := map[string]bool{}
	// The key argument counts as required here: a schema that requires only the key asks for
	// no other argument.
	for _, r := range synth.Required(schema, "") {
		required[r] = true
	}
	var names []string
	for name := range props {
		if name == keyArg || (len(required) > 0 && !required[name]) {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]arg, 0, len(names))
	for _, name := range names {
		p, _ := props[name].(map[string]any)
		v, todo := example(p)
		out = append(out, arg{name: name, value: v, todo: todo, alt: alternative(p, v)})
	}
	return out
}

// scope makes the free-form string arguments unique per session; strings the schema constrains
// (enum, const, format, pattern, a short maxLength) are left as they are.
func scope(schema map[string]any, args []arg) []arg {
	props, _ := schema["properties"].(map[string]any)
	out := append([]arg(nil), args...)
	for i, a := range out {
		s, ok := a.value.(string)
		p, _ := props[a.name].(map[string]any)
		if !ok || !freeString(p, s) {
			continue
		}
		out[i].value = sessionScoped(s)
		out[i].alt = sessionScoped(s + "_other")
	}
	return out
}

func freeString(p map[string]any, s string) bool {
	for _, k := range []string{"enum", "const", "format", "pattern"} {
		if _, ok := p[k]; ok {
			return false
		}
	}
	if m, ok := p["maxLength"].(float64); ok && int(m) < len(s)+len("_")+24 {
		return false
	}
	return true
}

// example is a value for a property from its schema: the one it gives (synth.Given); a
// value of its type that the schema accepts for a boolean, a number or an integer (within
// minimum and maximum); else a placeholder (scenario.Placeholder), with todo set, for the user
// to fill in: a made-up string or an untyped value would be refused by the server, and the
// generated steps would then pass or fail on that refusal instead of on retry safety.
func example(p map[string]any) (any, bool) {
	if v, ok := synth.Given(p); ok {
		return v, false
	}
	switch synth.TypeOf(p) {
	case "number":
		if m, ok := p["minimum"].(float64); ok {
			return m + 1, false
		}
		if m, ok := p["exclusiveMinimum"].(float64); ok {
			return m + 1, false
		}
		if m, ok := p["maximum"].(float64); ok {
			return m - 1, false
		}
		return 1.5, false
	case "integer":
		if m, ok := p["minimum"].(float64); ok {
			return int(m) + 1, false
		}
		if m, ok := p["exclusiveMinimum"].(float64); ok {
			return int(m) + 1, false
		}
		if m, ok := p["maximum"].(float64); ok {
			return int(m) - 1, false
		}
		return 1, false
	case "boolean":
		return true, false
	case "array":
		item, _ := p["items"].(map[string]any)
		v, todo := example(item)
		return []any{v}, todo
	case "object":
		m := map[string]any{}
		todo := false
		for _, a := range exampleArgs(p, "") {
			m[a.name] = a.value
			todo = todo || a.todo
		}
		return m, todo
	case "string":
		return scenario.Placeholder + "string)", true
	}
	return scenario.Placeholder + "value)", true
}

// alternative is another valid value for the key-reuse step: another enum member when there is
// one, else a changed value of the same kind (an array gets another element, an object a
// changed member), so that the payload really differs.
func alternative(p map[string]any, v any) any {
	if e, ok := p["enum"].([]any); ok {
		for _, x := range e {
			if !reflect.DeepEqual(x, v) {
				return x
			}
		}
	}
	return other(v)
}

// other returns a different value of the same kind. It is not a jsonvalue walk: it follows one
// path (a list's last element, an object's first field) to change the leaf there.
func other(v any) any {
	switch x := v.(type) {
	case float64:
		return x + 1
	case int:
		return x + 1
	case bool:
		return !x
	case string:
		return x + "_other"
	case sessionScoped:
		return x + "_other"
	case []any:
		out := append([]any(nil), x...)
		if len(x) == 0 {
			return append(out, "other")
		}
		return append(out, other(x[len(x)-1]))
	case map[string]any:
		out := make(map[string]any, len(x)+1)
		for k, e := range x {
			out[k] = e
		}
		keys := jsonvalue.SortedKeys(x)
		if len(keys) == 0 {
			out["other"] = true
		} else {
			out[keys[0]] = other(x[keys[0]])
		}
		return out
	case nil:
		return "other"
	}
	return v
}

// Scenario returns the YAML of a scenario for one mutating tool: a sequential retry, a retry
// after a lost response, a burst of one key, and key reuse with another payload. Whether a key
// executed more than once is left to idemtest's own per-key verdict, which judges every trial
// from the answers; the assertions check what the verdict cannot know (that a retry was served
// from the stored result, that another payload was refused).
func Scenario(t endpoint.Tool, o Options) []byte {
	if o.Fanout == 0 {
		o.Fanout = 8
	}
	if o.Trials == 0 {
		o.Trials = 10
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Generated by idemtest init from the tool's input schema. Values starting with %s…)\n", scenario.Placeholder)
	fmt.Fprintf(&b, "# are placeholders: replace each with a value the server accepts (the scenario does not\n")
	fmt.Fprintf(&b, "# load until then). Strings ending in _{{ session }} are unique per trial, so that\n")
	fmt.Fprintf(&b, "# reruns never meet earlier data.\n")
	fmt.Fprintf(&b, "name: %s\n", quote(t.Name+" is retry-safe"))
	fmt.Fprintf(&b, "tags: [generated]\n")
	fmt.Fprintf(&b, "endpoint: %s\n", quote(o.Endpoint))
	fmt.Fprintf(&b, "trials: %d\n", o.Trials)
	fmt.Fprintf(&b, "steps:")

	// Without a schema (a plain HTTP tool) the arguments are one placeholder to replace.
	var args, changed string
	if t.InputSchema == nil {
		args = fmt.Sprintf("args: {%q: %q}   # TODO: the tool's arguments (the server publishes no schema)", scenario.Placeholder+"args)", scenario.Placeholder+"value)")
		changed = fmt.Sprintf("args: {%q: %q}   # TODO: first's arguments with one value changed", scenario.Placeholder+"args)", scenario.Placeholder+"changed)")
	} else if as := scope(t.InputSchema, exampleArgs(t.InputSchema, o.KeyArg)); len(as) > 0 {
		args = argsText(as)
		alt := append([]arg(nil), as...)
		alt[0].value = alt[0].alt
		changed = argsText(alt)
	}
	call := func(id, args string, extra ...string) {
		fmt.Fprintf(&b, "  - id: %s\n    call_tool: %s\n", id, quote(t.Name))
		if args != "" {
			fmt.Fprintf(&b, "    %s\n", args)
		}
		for _, e := range extra {
			fmt.Fprintf(&b, "    %s\n", e)
		}
	}
	// A tool marked idempotentHint may run again on a retry, harmlessly: its retries must
	// succeed but need not be replays, and another payload under the same key is just another
	// call.
	replayed, retryNote, lostNote := " && retry.replayed", "returns the stored result",
		"must not execute again"
	if t.Idempotent {
		replayed, retryNote, lostNote = "", "succeeds (idempotentHint: it may execute again, harmlessly)",
			"must still succeed"
	}
	fmt.Fprintf(&b, "\n  # A sequential retry with the same key %s.\n", retryNote)
	call("first", args)
	b.WriteString("  - id: retry\n    retry_of: first\n")
	fmt.Fprintf(&b, "  - assert: retry.ok%s\n", replayed)

	fmt.Fprintf(&b, "\n  # The server commits but the answer is lost; the retry %s.\n", lostNote)
	call("lost", args, "lose_response: true")
	b.WriteString("  - id: after_lost\n    retry_of: lost\n")
	fmt.Fprintf(&b, "  - assert: after_lost.ok%s\n", strings.ReplaceAll(replayed, "retry.", "after_lost."))

	fmt.Fprintf(&b, "\n  # %d copies of one call, one key, released together. ", o.Fanout)
	if t.Idempotent {
		b.WriteString("Being idempotent by nature, the tool\n  # may run every copy; its answers are not counted as executions.\n")
	} else {
		b.WriteString("idemtest's verdict fails the\n  # trial when the key executes more than once (two different answers, neither a replay).\n")
	}
	call("burst", args, fmt.Sprintf("fanout: %d", o.Fanout))
	b.WriteString("  - assert: burst.ok >= 1\n")

	if changed != "" && !t.Idempotent {
		b.WriteString("\n  # The same key with another payload is rejected, neither executed nor replayed.\n")
		call("reuse", changed, `key: "{{ first.key }}"`, "expect: fail")
		b.WriteString("  - assert: \"!reuse.replayed\"\n")
	}
	return []byte(b.String())
}

// argsText is the args: block of a step, one line per argument.
func argsText(as []arg) string {
	if len(as) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("args:")
	for _, a := range as {
		line := fmt.Sprintf("\n      %s: %s", yamlKey(a.name), value(a.value))
		if a.todo {
			line += "   # TODO: a value the server accepts"
		}
		b.WriteString(line)
	}
	return b.String()
}

// value writes v inline, one line per argument: JSON is YAML flow syntax.
func value(v any) string {
	if s, ok := v.(sessionScoped); ok {
		return quote(s.String())
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// quote writes s as a double-quoted YAML scalar, whatever it contains.
func quote(s string) string {
	return value(s)
}

func yamlKey(k string) string {
	out, _ := yaml.Marshal(k)
	return strings.TrimSpace(string(out))
}
