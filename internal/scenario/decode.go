package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/redact"
)

// file is one YAML file being decoded; it collects every error instead of stopping at the first.
type file struct {
	path  string
	lines []string
	errs  Errors
	// namesHint lists the names an expression being compiled may use, for "unknown name" hints.
	namesHint []string
	// serviceRefs are services.NAME references, checked once the scenario's services are known.
	serviceRefs []serviceUse
	// sinkRefs are sinks.NAME references in config templates.
	sinkRefs []serviceUse
	// observed are the sinks (maps) and probes (dynamic) assertions may use, by name.
	observed map[string]any
	aliases  int
	// secrets are the values from the environment and the URL passwords this file holds.
	secrets redact.Secrets
	// emptyVars are the variables that expanded to "" in each scalar, for hints.
	emptyVars map[*yaml.Node][]string
}

func (f *file) pos(n *yaml.Node) Pos {
	return Pos{File: f.path, Line: n.Line, Col: n.Column}
}

func (f *file) errAt(p Pos, hint, format string, args ...any) {
	src := ""
	if p.Line > 0 && p.Line <= len(f.lines) {
		src = f.lines[p.Line-1]
	}
	f.errs = append(f.errs, &Error{Pos: p, Msg: fmt.Sprintf(format, args...), Hint: hint, Source: src})
}

func (f *file) errf(n *yaml.Node, hint, format string, args ...any) {
	f.errAt(f.pos(n), hint, format, args...)
}

// offsetPos is the position of byte off inside the scalar n's value.
func (f *file) offsetPos(n *yaml.Node, off int) Pos {
	p := f.pos(n)
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

// mapping checks that n is a mapping with only the allowed keys and returns its values by key.
// Unknown keys are reported with the nearest allowed key as a suggestion.
func (f *file) mapping(n *yaml.Node, what string, allowed ...string) (map[string]*yaml.Node, bool) {
	if n.Kind != yaml.MappingNode {
		f.errf(n, "", "%s must be a mapping (key: value lines), got %s", what, kindName(n))
		return nil, false
	}
	out := map[string]*yaml.Node{}
	keys := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := out[k.Value]; dup {
			f.errf(k, "remove one of them", "%s: %q is given twice", what, k.Value)
			continue
		}
		if !contains(allowed, k.Value) {
			hint := "allowed fields: " + strings.Join(allowed, ", ")
			if c := closest(k.Value, allowed); c != "" {
				hint = fmt.Sprintf("did you mean %q?", c)
			}
			f.errf(k, hint, "unknown field %q in %s", k.Value, what)
			continue
		}
		out[k.Value] = v
		keys[k.Value] = k
	}
	return out, true
}

// entries returns the key and value nodes of a mapping in order.
func (f *file) entries(n *yaml.Node, what string) [][2]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		f.errf(n, "", "%s must be a mapping, got %s", what, kindName(n))
		return nil
	}
	var out [][2]*yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if seen[k.Value] {
			// YAML keeps the last; a silent overwrite (of an argument, a header) hides a mistake.
			f.errf(k, "remove one of them", "%s: %q is given twice", what, k.Value)
			continue
		}
		seen[k.Value] = true
		out = append(out, [2]*yaml.Node{k, n.Content[i+1]})
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func kindName(n *yaml.Node) string {
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

// decodeOne parses the first YAML document of data into doc and reports a second one: a file
// is one scenario, and what follows a "---" would otherwise be dropped without a word. A bare
// trailing "---" is allowed.
func (f *file) decodeOne(data []byte, doc *yaml.Node) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	var next yaml.Node
	err := dec.Decode(&next)
	switch {
	case errors.Is(err, io.EOF):
	case err != nil:
		return err
	case len(next.Content) == 1 && next.Content[0].Kind == yaml.ScalarNode && next.Content[0].Tag == "!!null" && next.Content[0].Value == "":
	default:
		f.errAt(Pos{File: f.path, Line: next.Line, Col: 1}, "put each scenario in a file of its own",
			"a second YAML document: a scenario file holds one document")
	}
	return nil
}

// expression is an expression written as a YAML string: a number, a boolean or a mapping is a
// mistake (assert: 42 would otherwise load and fail only when run).
func (f *file) expression(n *yaml.Node, what string) string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!str" && n.Tag != "!!null" {
		f.errf(n, `an assertion is an expression such as first.ok && first.status == 200; quote a literal: '42 == 42'`,
			"%s must be an expression string, got %s %s", what, strings.TrimPrefix(n.Tag, "!!"), kindName(n))
		return n.Value // compiled all the same, so the error is reported once
	}
	return f.str(n, what)
}

func (f *file) str(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		f.errf(n, "", "%s must be a string, got %s", what, kindName(n))
		return ""
	}
	return n.Value
}

func (f *file) boolean(n *yaml.Node, what string) bool {
	if n.Kind == yaml.ScalarNode {
		switch n.Value {
		case "true":
			return true
		case "false":
			return false
		}
	}
	f.errf(n, "write true or false", "%s must be true or false, got %s", what, kindName(n))
	return false
}

func (f *file) integer(n *yaml.Node, what string, lo, hi int) int {
	if n.Kind == yaml.ScalarNode {
		if v, err := strconv.Atoi(n.Value); err == nil {
			if v < lo || v > hi {
				f.errf(n, fmt.Sprintf("use a number from %d to %d", lo, hi), "%s is %d, out of range", what, v)
			}
			return v
		}
	}
	f.errf(n, fmt.Sprintf("use a whole number from %d to %d", lo, hi), "%s must be a whole number, got %s", what, kindName(n))
	return lo
}

func (f *file) duration(n *yaml.Node, what string) time.Duration {
	d, _ := f.durationOK(n, what)
	return d
}

// durationOK parses a non-negative duration; ok is false when an error was reported.
func (f *file) durationOK(n *yaml.Node, what string) (time.Duration, bool) {
	if n.Kind == yaml.ScalarNode {
		d, err := time.ParseDuration(n.Value)
		if err == nil && d >= 0 {
			return d, true
		}
		if err == nil {
			f.errf(n, "use a positive duration", "%s must not be negative, got %s", what, n.Value)
			return 0, false
		}
	}
	f.errf(n, `use a duration such as 500ms, 2s or 1m30s`, "%s must be a duration, got %s", what, kindName(n))
	return 0, false
}

func (f *file) strings(n *yaml.Node, what string) []string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return []string{n.Value}
	}
	if n.Kind != yaml.SequenceNode {
		f.errf(n, "", "%s must be a list of strings, got %s", what, kindName(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		out = append(out, f.str(c, what+" entry"))
	}
	return out
}

// value converts a YAML tree into plain Go values (maps, lists, strings, numbers, bools).
func (f *file) value(n *yaml.Node) any {
	switch n.Kind {
	case yaml.AliasNode:
		// Aliases are expanded, within a budget, so a "billion laughs" file cannot hang a run.
		if f.aliases++; f.aliases > 1000 {
			if f.aliases == 1001 {
				f.errf(n, "write the values out", "too many YAML alias expansions")
			}
			return nil
		}
		return f.value(n.Alias)
	case yaml.MappingNode:
		m := map[string]any{}
		for _, kv := range f.entries(n, "value") {
			m[kv[0].Value] = f.value(kv[1])
		}
		return m
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			l = append(l, f.value(c))
		}
		return l
	}
	var v any
	if err := n.Decode(&v); err != nil {
		f.errf(n, "", "%v", err)
	}
	switch x := v.(type) {
	case int:
		return x
	case uint64:
		return float64(x)
	}
	return v
}

func (f *file) template(n *yaml.Node, what string, env assert.Env) *assert.Template {
	s := f.str(n, what)
	t, err := assert.CompileTemplate(s, env)
	if err != nil {
		f.exprError(n, err, what)
		return nil
	}
	return t
}

// dir decodes a working directory. A relative one is relative to the file that declares it, so
// a config works from anywhere.
func (f *file) dir(n *yaml.Node) string {
	d := f.str(n, "dir")
	if !filepath.IsAbs(d) {
		d = filepath.Join(filepath.Dir(f.path), d)
	}
	return d
}

// templateMap decodes a mapping of names to templates (headers, env); a value is named
// "label NAME" in errors. With refs, services.NAME and sinks.NAME uses are recorded for checkRefs.
func (f *file) templateMap(n *yaml.Node, what, label string, env assert.Env, refs bool) map[string]*assert.Template {
	out := map[string]*assert.Template{}
	for _, kv := range f.entries(n, what) {
		out[kv[0].Value] = f.template(kv[1], label+" "+kv[0].Value, env)
		if refs {
			f.checkServiceRefs(kv[1])
		}
	}
	return out
}

// choice decodes a string that must be one of allowed. Another value is reported as "unknown
// what" with the nearest allowed one, or with hint when none is near; ok is false then.
func choice[T ~string](f *file, n *yaml.Node, what string, allowed []T, hint string) (v T, ok bool) {
	v = T(f.str(n, what))
	if slices.Contains(allowed, v) {
		return v, true
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	if c := closest(string(v), names); c != "" {
		hint = fmt.Sprintf("did you mean %q?", c)
	}
	f.errf(n, hint, "unknown %s %q", what, v)
	return v, false
}

// exprError reports an expression error at its position inside the scalar n.
func (f *file) exprError(n *yaml.Node, err error, what string) {
	var e *assert.Error
	if errors.As(err, &e) {
		hint := e.Hint
		if strings.HasPrefix(e.Msg, "unknown name") {
			hint = strings.TrimSpace(hint + " names available here: " + strings.Join(f.namesHint, ", "))
		}
		if n.Style == 0 && n.LineComment != "" && (e.Offset >= len(n.Value)-1 || strings.Contains(e.Msg, "not terminated")) {
			// YAML ended the unquoted string at " #": the expression the author wrote is longer.
			hint = strings.TrimSpace(hint + fmt.Sprintf(" a ' #' starts a YAML comment, so the expression ends before %q: quote it ('…' or \"…\")", shorten(n.LineComment, 40)))
		}
		f.errAt(f.offsetPos(n, e.Offset), hint, "%s: %s", what, e.Msg)
		return
	}
	f.errf(n, "", "%s: %v", what, err)
}
