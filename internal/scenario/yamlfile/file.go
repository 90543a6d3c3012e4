package yamlfile

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/scenario"
)

// File is one YAML file being decoded; it collects every error instead of stopping at the first.
type File struct {
	Path  string
	lines []string
	// Errs are the problems found so far, in the order they were found.
	Errs Errors
	// NamesHint lists the names an expression being compiled may use, for "unknown name" hints.
	NamesHint []string
	aliases   int
	// Secrets are the secrets this file holds: URL and DSN passwords, credential header values,
	// and the values of variables named like secrets or listed under secrets: (expandEnv).
	Secrets redact.Secrets
	// lookupEnv is how the file's ${VAR} were expanded, for the variables secrets: names.
	lookupEnv func(string) (string, bool)
	// emptyVars are the variables that expanded to "" in each scalar, for hints.
	emptyVars map[*yaml.Node][]string
}

// Pos is where n is written.
func (f *File) Pos(n *yaml.Node) scenario.Pos {
	return scenario.Pos{File: f.Path, Line: n.Line, Col: n.Column}
}

// ErrAt records a problem at p, with the text of its line for the caret.
func (f *File) ErrAt(p scenario.Pos, hint, format string, args ...any) {
	src := ""
	if p.Line > 0 && p.Line <= len(f.lines) {
		src = f.lines[p.Line-1]
	}
	f.Errs = append(f.Errs, &Error{Pos: p, Msg: fmt.Sprintf(format, args...), Hint: hint, Source: src})
}

// Errf records a problem at n.
func (f *File) Errf(n *yaml.Node, hint, format string, args ...any) {
	f.ErrAt(f.Pos(n), hint, format, args...)
}

// OffsetPos is the position of byte off inside the scalar n's value.
func (f *File) OffsetPos(n *yaml.Node, off int) scenario.Pos {
	p := f.Pos(n)
	switch n.Style {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		before := n.Value[:min(off, len(n.Value))]
		nl := strings.Count(before, "\n")
		p.Line += 1 + nl
		if p.Line <= len(f.lines) {
			indent := len(f.lines[p.Line-1]) - len(strings.TrimLeft(f.lines[p.Line-1], " "))
			p.Col = indent + 1 + len(before) - (strings.LastIndex(before, "\n") + 1)
		}
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		p.Col += 1 + off
	default:
		p.Col += off
	}
	return p
}

// Mapping checks that n is a mapping with only the allowed keys and returns its values by key.
// Unknown keys are reported with the nearest allowed key as a suggestion.
func (f *File) Mapping(n *yaml.Node, what string, allowed ...string) (map[string]*yaml.Node, bool) {
	if n.Kind != yaml.MappingNode {
		f.Errf(n, "", "%s must be a mapping (key: value lines), got %s", what, KindName(n))
		return nil, false
	}
	out := map[string]*yaml.Node{}
	keys := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := out[k.Value]; dup {
			f.Errf(k, "remove one of them", "%s: %q is given twice", what, k.Value)
			continue
		}
		if !slices.Contains(allowed, k.Value) {
			hint := "allowed fields: " + strings.Join(allowed, ", ")
			if c := assert.Closest(k.Value, allowed); c != "" {
				hint = fmt.Sprintf("did you mean %q?", c)
			}
			f.Errf(k, hint, "unknown field %q in %s", k.Value, what)
			continue
		}
		out[k.Value] = v
		keys[k.Value] = k
	}
	return out, true
}

// Entries returns the key and value nodes of a mapping in order.
func (f *File) Entries(n *yaml.Node, what string) [][2]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		f.Errf(n, "", "%s must be a mapping, got %s", what, KindName(n))
		return nil
	}
	var out [][2]*yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if seen[k.Value] {
			// YAML keeps the last; a silent overwrite (of an argument, a header) hides a mistake.
			f.Errf(k, "remove one of them", "%s: %q is given twice", what, k.Value)
			continue
		}
		seen[k.Value] = true
		out = append(out, [2]*yaml.Node{k, n.Content[i+1]})
	}
	return out
}

// KindName says what n is, for messages: "a mapping", "a list", "nothing" or the quoted value.
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", shorten(n.Value, 60))
	}
	return "an alias"
}

// shorten cuts a value quoted in a message: the source excerpt already shows where it is.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Expression is an expression written as a YAML string: a number, a boolean or a mapping is a
// mistake (assert: 42 would otherwise load and fail only when run).
func (f *File) Expression(n *yaml.Node, what string) string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!str" && n.Tag != "!!null" {
		f.Errf(n, `an assertion is an expression such as first.ok && first.status == 200; quote a literal: '42 == 42'`,
			"%s must be an expression string, got %s %s", what, strings.TrimPrefix(n.Tag, "!!"), KindName(n))
		return n.Value // compiled all the same, so the error is reported once
	}
	return f.Str(n, what)
}

// Str decodes a string.
func (f *File) Str(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		f.Errf(n, "", "%s must be a string, got %s", what, KindName(n))
		return ""
	}
	return n.Value
}

// Bool decodes true or false.
func (f *File) Bool(n *yaml.Node, what string) bool {
	if n.Kind == yaml.ScalarNode {
		switch n.Value {
		case "true":
			return true
		case "false":
			return false
		}
	}
	f.Errf(n, "write true or false", "%s must be true or false, got %s", what, KindName(n))
	return false
}

// Int decodes a whole number from lo to hi.
func (f *File) Int(n *yaml.Node, what string, lo, hi int) int {
	if n.Kind == yaml.ScalarNode {
		if v, err := strconv.Atoi(n.Value); err == nil {
			if v < lo || v > hi {
				f.Errf(n, fmt.Sprintf("use a number from %d to %d", lo, hi), "%s is %d, out of range", what, v)
			}
			return v
		}
	}
	f.Errf(n, fmt.Sprintf("use a whole number from %d to %d", lo, hi), "%s must be a whole number, got %s", what, KindName(n))
	return lo
}

// Duration decodes a non-negative duration such as 500ms.
func (f *File) Duration(n *yaml.Node, what string) time.Duration {
	d, _ := f.DurationOK(n, what)
	return d
}

// DurationOK parses a non-negative duration; ok is false when an error was reported.
func (f *File) DurationOK(n *yaml.Node, what string) (time.Duration, bool) {
	if n.Kind == yaml.ScalarNode {
		d, err := time.ParseDuration(n.Value)
		if err == nil && d >= 0 {
			return d, true
		}
		if err == nil {
			f.Errf(n, "use a positive duration", "%s must not be negative, got %s", what, n.Value)
			return 0, false
		}
	}
	f.Errf(n, `use a duration such as 500ms, 2s or 1m30s`, "%s must be a duration, got %s", what, KindName(n))
	return 0, false
}

// Strings decodes a list of strings; a single string is a list of one.
func (f *File) Strings(n *yaml.Node, what string) []string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return []string{n.Value}
	}
	if n.Kind != yaml.SequenceNode {
		f.Errf(n, "", "%s must be a list of strings, got %s", what, KindName(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		out = append(out, f.Str(c, what+" entry"))
	}
	return out
}

// Value converts a YAML tree into plain Go values (maps, lists, strings, numbers, bools).
func (f *File) Value(n *yaml.Node) any {
	switch n.Kind {
	case yaml.AliasNode:
		// Aliases are expanded, within a budget, so a "billion laughs" file cannot hang a run.
		if f.aliases++; f.aliases > 1000 {
			if f.aliases == 1001 {
				f.Errf(n, "write the values out", "too many YAML alias expansions")
			}
			return nil
		}
		return f.Value(n.Alias)
	case yaml.MappingNode:
		m := map[string]any{}
		for _, kv := range f.Entries(n, "value") {
			m[kv[0].Value] = f.Value(kv[1])
		}
		return m
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			l = append(l, f.Value(c))
		}
		return l
	}
	var v any
	if err := n.Decode(&v); err != nil {
		f.Errf(n, "", "%v", err)
	}
	switch x := v.(type) {
	case int:
		return x
	case uint64:
		return float64(x)
	}
	return v
}

// Template compiles a string with {{ }} parts against env.
func (f *File) Template(n *yaml.Node, what string, env assert.Env) *assert.Template {
	s := f.Str(n, what)
	t, err := assert.CompileTemplate(s, env)
	if err != nil {
		f.ExprError(n, err, what)
		return nil
	}
	return t
}

// Dir decodes a working directory. A relative one is relative to the file that declares it, so
// a config works from anywhere.
func (f *File) Dir(n *yaml.Node) string {
	d := f.Str(n, "dir")
	if !filepath.IsAbs(d) {
		d = filepath.Join(filepath.Dir(f.Path), d)
	}
	return d
}

// TemplateMap decodes a mapping of names to templates (headers, env); a value is named
// "label NAME" in errors. each, when not nil, is called with every value node kept.
func (f *File) TemplateMap(n *yaml.Node, what, label string, env assert.Env, each func(*yaml.Node)) map[string]*assert.Template {
	out := map[string]*assert.Template{}
	for _, kv := range f.Entries(n, what) {
		out[kv[0].Value] = f.Template(kv[1], label+" "+kv[0].Value, env)
		if each != nil {
			each(kv[1])
		}
	}
	return out
}

// Choice decodes a string that must be one of allowed. Another value is reported as "unknown
// what" with the nearest allowed one, or with hint when none is near; ok is false then.
func Choice[T ~string](f *File, n *yaml.Node, what string, allowed []T, hint string) (v T, ok bool) {
	v = T(f.Str(n, what))
	if slices.Contains(allowed, v) {
		return v, true
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	if c := assert.Closest(string(v), names); c != "" {
		hint = fmt.Sprintf("did you mean %q?", c)
	}
	f.Errf(n, hint, "unknown %s %q", what, v)
	return v, false
}

// ExprError reports an expression error at its position inside the scalar n.
func (f *File) ExprError(n *yaml.Node, err error, what string) {
	var e *assert.Error
	if errors.As(err, &e) {
		hint := e.Hint
		if strings.HasPrefix(e.Msg, "unknown name") {
			hint = strings.TrimSpace(hint + " names available here: " + strings.Join(f.NamesHint, ", "))
		}
		if n.Style == 0 && n.LineComment != "" && (e.Offset >= len(n.Value)-1 || strings.Contains(e.Msg, "not terminated")) {
			// YAML ended the unquoted string at " #": the expression the author wrote is longer.
			hint = strings.TrimSpace(hint + fmt.Sprintf(" a ' #' starts a YAML comment, so the expression ends before %q: quote it ('…' or \"…\")", shorten(n.LineComment, 40)))
		}
		f.ErrAt(f.OffsetPos(n, e.Offset), hint, "%s: %s", what, e.Msg)
		return
	}
	f.Errf(n, "", "%s: %v", what, err)
}

// EmptyVars are the variables that expanded to "" in n, for a hint when its value is refused.
func (f *File) EmptyVars(n *yaml.Node) []string { return f.emptyVars[n] }
