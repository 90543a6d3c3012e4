package assert

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Template is a string with {{ expr }} parts, compiled once.
type Template struct {
	Source string
	parts  []part
}

type part struct {
	text string
	prog *Program
}

// HasTemplate reports whether s contains a {{ }} part.
func HasTemplate(s string) bool { return strings.Contains(s, "{{") }

// CompileTemplate compiles every {{ }} part of s against env. Offsets in errors are into s.
func CompileTemplate(s string, env Env) (*Template, error) {
	t := &Template{Source: s}
	rest, base := s, 0
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			if rest != "" {
				t.parts = append(t.parts, part{text: rest})
			}
			return t, nil
		}
		j := strings.Index(rest[i+2:], "}}")
		if j < 0 {
			return nil, &Error{Offset: base + i, Msg: "unclosed {{: add }} after the expression"}
		}
		if i > 0 {
			t.parts = append(t.parts, part{text: rest[:i]})
		}
		src := rest[i+2 : i+2+j]
		if strings.TrimSpace(src) == "" {
			return nil, &Error{Offset: base + i, Msg: "empty {{ }}"}
		}
		p, err := Compile(src, env)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.Offset += base + i + 2
			}
			return nil, err
		}
		t.parts = append(t.parts, part{prog: p})
		base += i + 2 + j + 2
		rest = rest[i+2+j+2:]
	}
}

// Uses reports whether any part of the template refers to the top-level name.
func (t *Template) Uses(name string) bool {
	for _, p := range t.parts {
		if p.prog != nil && p.prog.Uses(name) {
			return true
		}
	}
	return false
}

// Members lists the fields read from top-level names, with offsets into the template.
func (t *Template) Members() []Member {
	var out []Member
	off := 0
	for _, p := range t.parts {
		if p.prog == nil {
			off += len(p.text)
			continue
		}
		for _, m := range p.prog.Members() {
			m.Offset += off + 2
			out = append(out, m)
		}
		off += len(p.prog.Source) + 4
	}
	return out
}

// Eval renders the template. A template that is exactly one {{ }} returns the value with its
// type; otherwise the parts are joined as a string (maps and lists as JSON).
func (t *Template) Eval(env map[string]any) (any, error) {
	if len(t.parts) == 1 && t.parts[0].prog != nil {
		return t.parts[0].prog.Run(env)
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.prog == nil {
			b.WriteString(p.text)
			continue
		}
		v, err := p.prog.Run(env)
		if err != nil {
			return nil, fmt.Errorf("{{ %s }}: %w", strings.TrimSpace(p.prog.Source), err)
		}
		b.WriteString(Text(v))
	}
	return b.String(), nil
}

// Text formats a value for interpolation into a string. A map or list is not walked but
// encoded whole, by encoding/json as templates always have (not jsonvalue.Canonical, which
// leaves <, > and & unescaped).
func Text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Struct, reflect.Slice, reflect.Map:
		// A whole result ({{ first }}) or a typed list of them, with the names expressions use.
		b, _ := json.Marshal(v)
		return string(b)
	}
	return fmt.Sprint(v)
}
