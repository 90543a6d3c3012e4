package synth

// The readers below are what a property schema says, shared by check (Synthesize) and init
// (package scaffold), so that a schema's type list, its const or its required list mean one
// thing in the arguments check builds and in the scenario init writes. What each makes of a
// schema that gives no value stays its own: check must build every value or say why it cannot,
// init writes a placeholder for a person to fill in.

// TypeOf is the type a property schema names: its "type", or the first type other than null
// in a list of them ("" when it names none).
func TypeOf(p map[string]any) string {
	switch t := p["type"].(type) {
	case string:
		return t
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok && s != "null" {
				return s
			}
		}
	}
	return ""
}

// Given is the value a property schema itself gives, the first of: its first example, its
// default, its const, its first enum member (a const is checked before enum: it is the one
// value both accept). ok is false when it gives none.
func Given(p map[string]any) (v any, ok bool) {
	if ex, isList := p["examples"].([]any); isList && len(ex) > 0 {
		return ex[0], true
	}
	if d, has := p["default"]; has {
		return d, true
	}
	if c, has := p["const"]; has {
		return c, true
	}
	if e, isList := p["enum"].([]any); isList && len(e) > 0 {
		return e[0], true
	}
	return nil, false
}

// Required are the names an object schema lists as required, in its order, keyArg left out.
func Required(schema map[string]any, keyArg string) []string {
	req, _ := schema["required"].([]any)
	var out []string
	for _, r := range req {
		if s, ok := r.(string); ok && s != keyArg {
			out = append(out, s)
		}
	}
	return out
}
