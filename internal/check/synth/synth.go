package synth

import (
	"fmt"
	"sort"
	"strings"
)

// sessionUUID is a UUID whose last group is the trial's session (12 hex digits): valid, the same
// for every call of a trial (so a retry sends the same payload) and new every trial.
const sessionUUID = "00000000-0000-4000-8000-{{ session }}"

// Synthesize builds arguments for a tool from its JSON input schema: every required property
// (nested required objects too), each from its examples, default, enum or const, else a value of
// its type and format. Strings are made unique per trial with {{ session }}; a uri points at
// target (a loopback sink or address) so that a tool that fetches stays on the machine. The key
// argument is left out: idemtest adds it. An error says which argument could not be built.
func Synthesize(schema map[string]any, keyArg, target string) (map[string]any, error) {
	if schema == nil {
		return map[string]any{}, nil
	}
	v, err := object(schema, keyArg, target, "")
	if err != nil {
		return nil, err
	}
	return v, nil
}

func object(schema map[string]any, keyArg, target, path string) (map[string]any, error) {
	props, _ := schema["properties"].(map[string]any)
	out := map[string]any{}
	names := Required(schema, keyArg)
	sort.Strings(names)
	for _, name := range names {
		p, ok := props[name].(map[string]any)
		if !ok {
			p = map[string]any{}
		}
		v, err := value(p, name, target, join(path, name))
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// value builds one value of a property schema.
func value(p map[string]any, name, target, path string) (any, error) {
	if v, ok := Given(p); ok {
		// An example string is made unique per trial, unless its shape is constrained.
		ex, _ := p["examples"].([]any)
		if s, ok := v.(string); ok && len(ex) > 0 && p["format"] == nil && p["pattern"] == nil && p["maxLength"] == nil && p["enum"] == nil {
			return s + "_{{ session }}", nil
		}
		return v, nil
	}
	for _, alt := range []string{"anyOf", "oneOf", "allOf"} {
		if list, ok := p[alt].([]any); ok && len(list) > 0 {
			for _, a := range list {
				if m, ok := a.(map[string]any); ok && TypeOf(m) != "null" {
					return value(m, name, target, path)
				}
			}
		}
	}
	switch TypeOf(p) {
	case "string":
		return str(p, name, target, path)
	case "integer":
		return number(p, true), nil
	case "number":
		return number(p, false), nil
	case "boolean":
		return true, nil
	case "array":
		item, _ := p["items"].(map[string]any)
		if item == nil {
			item = map[string]any{"type": "string"}
		}
		n := 1
		if m, ok := p["minItems"].(float64); ok && int(m) > 1 {
			n = int(m)
		}
		out := make([]any, 0, n)
		for i := 0; i < n; i++ {
			v, err := value(item, name, target, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			if s, ok := v.(string); ok && i > 0 {
				v = fmt.Sprintf("%s_%d", s, i)
			}
			out = append(out, v)
		}
		return out, nil
	case "object":
		return object(p, "", target, path)
	case "":
		if _, ok := p["properties"]; ok {
			return object(p, "", target, path)
		}
		return nil, fmt.Errorf("argument %s: its schema gives no type, example or default", path)
	}
	return nil, fmt.Errorf("argument %s: cannot build a value of type %s", path, TypeOf(p))
}

func str(p map[string]any, name, target, path string) (any, error) {
	if pat, ok := p["pattern"].(string); ok && pat != "" {
		return nil, fmt.Errorf("argument %s: a string matching %q cannot be built; give it under check.tools", path, pat)
	}
	var s string
	switch p["format"] {
	case "email":
		s = "idemtest+{{ session }}@example.com"
	case "uuid":
		s = sessionUUID
	case "date-time":
		s = "2030-01-01T00:00:00Z"
	case "date":
		s = "2030-01-01"
	case "time":
		s = "12:00:00Z"
	case "uri", "url", "iri", "uri-reference":
		s = strings.TrimRight(target, "/") + "/idemtest/{{ session }}"
	case "hostname":
		s = "localhost"
	case "ipv4":
		s = "127.0.0.1"
	default:
		s = safe(name) + "_{{ session }}"
		if maxLen, ok := p["maxLength"].(float64); ok && int(maxLen) < len(safe(name))+13 {
			s = "{{ session }}"
			if int(maxLen) < 12 {
				return nil, fmt.Errorf("argument %s: at most %d characters leave no room for a value unique per trial; give it under check.tools", path, int(maxLen))
			}
		}
	}
	return s, nil
}

// safe keeps the letters and digits of a property name, for a readable value.
func safe(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r < 128 && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "v"
	}
	return b.String()
}

func number(p map[string]any, integer bool) any {
	v := 1.0
	if m, ok := p["minimum"].(float64); ok {
		v = m + 1
	}
	if m, ok := p["exclusiveMinimum"].(float64); ok {
		v = m + 1
	}
	if m, ok := p["maximum"].(float64); ok && v > m {
		v = m
	}
	if integer {
		return int(v)
	}
	return v
}

// Vary returns the arguments with one value changed, for the same key with another payload:
// the first number (plus one), else the first string (suffixed), else the first boolean
// (flipped), in argument name order. ok is false when there is nothing to change.
func Vary(args map[string]any) (map[string]any, string, bool) {
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(map[string]any, len(args))
	for k, v := range args {
		out[k] = v
	}
	for _, kind := range []string{"number", "string", "bool"} {
		for _, k := range names {
			switch x := args[k].(type) {
			case float64:
				if kind == "number" {
					out[k] = x + 1
					return out, k, true
				}
			case int:
				if kind == "number" {
					out[k] = x + 1
					return out, k, true
				}
			case string:
				if kind == "string" {
					out[k] = x + "_other"
					return out, k, true
				}
			case bool:
				if kind == "bool" {
					out[k] = !x
					return out, k, true
				}
			}
		}
	}
	return nil, "", false
}

// Broken is args with one argument left out, the one the server should miss: a required
// property of the input schema, else (no schema) the first argument; never the key argument.
// field is what was left out; ok is false when there is nothing to leave out.
func Broken(schema map[string]any, keyArg string, args map[string]any) (out map[string]any, field string, ok bool) {
	var names []string
	for _, n := range Required(schema, keyArg) {
		if _, has := args[n]; has {
			names = append(names, n)
		}
	}
	if len(names) == 0 && schema == nil {
		for n := range args {
			if n != keyArg {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return nil, "", false
	}
	sort.Strings(names)
	out = make(map[string]any, len(args))
	for k, v := range args {
		if k != names[0] {
			out[k] = v
		}
	}
	return out, names[0], true
}

// KeyLike is a property of the input schema whose name looks like an idempotency key and that
// is not keyArg, where idemtest sends the key ("" when there is none).
func KeyLike(schema map[string]any, keyArg string) string {
	props, _ := schema["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		norm := strings.NewReplacer("_", "", "-", "", ".", "").Replace(strings.ToLower(n))
		if n != keyArg && (strings.Contains(norm, "idempoten") || norm == "dedupkey" || norm == "dedupekey" || norm == "deduplicationkey" || norm == "deduplicationid") {
			return n
		}
	}
	return ""
}
