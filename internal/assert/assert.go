package assert

import (
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
	"github.com/idemtest/idemtest/internal/jsonvalue"
)

// Env declares the names an expression may use, with a sample value of each name's type. A
// struct value (CallResult, FanoutResult) has its fields checked, inside predicates too; names
// whose values are maps (sinks) are dynamic: their fields are not checked.
type Env map[string]any

// Dynamic marks a name whose value has no type until run time (a probe's result: a list of
// rows, a map, a number): every use of it compiles.
var Dynamic any = dynamic{}

type dynamic struct{}

// functions are the names callable in expressions besides expr's builtins.
var functions = map[string]bool{"countWhere": true, "uuid": true, "now": true, "without": true}

// keywords are expr's operator and literal words, which no name can be.
var keywords = map[string]bool{
	"in": true, "not": true, "and": true, "or": true, "matches": true, "contains": true,
	"startsWith": true, "endsWith": true, "let": true, "if": true, "else": true,
	"nil": true, "true": true, "false": true,
}

// Shadows says why name cannot name a value in expressions ("" when it can): an expr keyword
// never can, and a Dynamic name (a probe) cannot be an idemtest function or an expr built-in
// (keys, len, count, ...), because the built-in wins and the name silently means the function.
// A typed name (a step, a sink) hides the built-in instead, so first and count are fine step ids.
func Shadows(name string, dynamic bool) string {
	switch {
	case keywords[name]:
		return "an expression keyword"
	case !dynamic:
		return ""
	case functions[name]:
		return "an idemtest function in expressions"
	case slices.Contains(builtin.Names, name):
		return "an expr built-in function (" + name + "(...))"
	}
	return ""
}

// Names returns an Env in which each name holds a dynamic map.
func Names(names ...string) Env {
	env := Env{}
	for _, n := range names {
		env[n] = map[string]any{}
	}
	return env
}

// Error is a compile error at a byte offset of the expression as written.
type Error struct {
	Offset int
	Msg    string
	// Hint suggests a fix, such as the field or name the author most likely meant.
	Hint string
}

func (e *Error) Error() string { return e.Msg }

// Program is a compiled expression, safe for concurrent use.
type Program struct {
	// Source is the expression as written.
	Source string
	norm   string
	back   func(int) int
	prog   *vm.Program
	opts   []expr.Option
	names  map[string]bool
}

// Compile compiles src against env. Unknown names and syntax errors are reported as *Error, and
// so is a failure inside the expression library itself (a panic), with a hint at an idiom that
// compiles: a user's expression never crashes the loader.
//
// Only the names src uses are handed to expr, so compiling costs the expression's size, not the
// environment's: a scenario of n steps compiles its n assertions in O(n), not O(n²).
func Compile(src string, env Env) (p *Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, libraryError(src, fmt.Sprint(r))
		}
	}()
	norm, back := normalize(src)
	tree, err := parser.Parse(norm)
	if err != nil {
		return nil, toError(err, src, norm, back)
	}
	// Undefined variables are allowed so that Dynamic names compile; every other name must be
	// declared, which is checked below.
	used := map[string]bool{}
	declared := map[string]bool{}
	var order []*ast.IdentifierNode
	ast.Walk(&tree.Node, visitFunc(func(n *ast.Node) {
		switch v := (*n).(type) {
		case *ast.VariableDeclaratorNode:
			declared[v.Name] = true
		case *ast.IdentifierNode:
			used[v.Value] = true
			order = append(order, v)
		}
	}))
	opts := options(env, used)
	prog, err := expr.Compile(norm, opts...)
	if err != nil {
		return nil, toError(err, src, norm, back)
	}
	p = &Program{Source: src, norm: norm, back: back, prog: prog, opts: opts, names: used}
	for _, id := range order {
		if _, known := env[id.Value]; known || declared[id.Value] || functions[id.Value] {
			continue
		}
		unknown := &Error{Offset: back(id.Location().From), Msg: "unknown name " + id.Value}
		if c := Closest(id.Value, envNames(env)); c != "" {
			unknown.Hint = fmt.Sprintf("did you mean %q?", c)
		}
		return nil, unknown
	}
	return p, nil
}

// Uses reports whether the expression refers to the top-level name.
func (p *Program) Uses(name string) bool { return p.names[name] }

// Member is a field read directly from a top-level name: the "refunds" of
// payment_processor.refunds, at Offset in the source as written.
type Member struct {
	Name, Field string
	Offset      int
}

// Members lists the fields read directly from top-level names, for checks the expression
// language cannot make (a sink's route names).
func (p *Program) Members() []Member {
	tree, err := parser.Parse(p.norm)
	if err != nil {
		return nil
	}
	var out []Member
	ast.Walk(&tree.Node, visitFunc(func(n *ast.Node) {
		m, ok := (*n).(*ast.MemberNode)
		if !ok {
			return
		}
		id, ok := m.Node.(*ast.IdentifierNode)
		if !ok {
			return
		}
		if s, ok := m.Property.(*ast.StringNode); ok {
			out = append(out, Member{Name: id.Value, Field: s.Value, Offset: p.back(m.Property.Location().From)})
		}
	}))
	return out
}

// options are the expr options of an expression that uses the names in used: the environment
// declares those of env's names, and no other (see Compile).
func options(env Env, used map[string]bool) []expr.Option {
	full := map[string]any{}
	for k := range used {
		if v, ok := env[k]; ok && v != Dynamic {
			full[k] = v
		}
	}
	return []expr.Option{
		expr.Env(full),
		expr.AllowUndefinedVariables(),
		// expr's optimizer rewrites filter(list, pred)[0] into find(list, pred) and gives the new
		// node a struct type built without expr's type cache; compiling a field read on it
		// (filter(burst.calls, .ok)[0].result) then dereferences nil inside expr (v1.17.8). The
		// expressions are small and evaluated a few times per trial: correct beats optimised.
		expr.Optimize(optimize),
		expr.Patch(countPatch{}),
		expr.Function("countWhere", countWhere),
		expr.Function("uuid", func(...any) (any, error) { return newUUID(), nil }, new(func() string)),
		expr.Function("without", without),
	}
}

// optimize turns expr's optimizer on; a test turns it on to show that the panic it causes is
// reported as an error.
var optimize = false

// without returns a value with dotted paths left out, as compare.ignore leaves them out of the
// verdict's comparisons: without(listed.result, "at") compares a list's answer minus its
// timestamp.
func without(params ...any) (any, error) {
	if len(params) == 0 {
		return nil, errors.New("without(value, \"path\", …) needs a value")
	}
	paths := make([]string, 0, len(params)-1)
	for _, p := range params[1:] {
		s, ok := p.(string)
		if !ok {
			return nil, fmt.Errorf("without: a path must be a string, got %T", p)
		}
		paths = append(paths, s)
	}
	return jsonvalue.Without(params[0], paths), nil
}

// Run evaluates the program. A panic inside the expression library is returned as an error.
func (p *Program) Run(env map[string]any) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, libraryError(p.Source, fmt.Sprint(r))
		}
	}()
	return expr.Run(p.prog, env)
}

// Bool evaluates the program and requires a boolean result.
func (p *Program) Bool(env map[string]any) (bool, error) {
	out, err := p.Run(env)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("assertion must be true or false, got %s", Show(out))
	}
	return b, nil
}

func toError(err error, src, norm string, back func(int) int) error {
	var fe *file.Error
	if errors.As(err, &fe) {
		off := offsetOf(norm, fe.Line, fe.Column)
		e := &Error{Offset: back(off), Msg: fe.Message}
		noField(e)
		return e
	}
	// expr reports its own panics as an error with a Go stack trace: a defect of the library,
	// not of the expression, and no message for a scenario's author.
	return libraryError(src, err.Error())
}

// libraryError is a failure inside expr on src (a recovered panic, whose message may carry a
// stack trace), in words an author can act on.
func libraryError(src, msg string) *Error {
	msg, _, _ = strings.Cut(msg, "\n")
	e := &Error{
		Msg:  fmt.Sprintf("the expression library failed on this expression (%s)", strings.TrimSpace(msg)),
		Hint: "write it another way, such as first(filter(list, .ok)).field for the first match's field, or len(list) > 0 && list[0].field, and report the expression to idemtest",
	}
	return e
}

var noFieldMsg = regexp.MustCompile(`^type (\S+) has no field (\S+)$`)

// noField rewrites expr's "type assert.CallResult has no field okk" in the scenario's words,
// with the field most likely meant.
func noField(e *Error) {
	m := noFieldMsg.FindStringSubmatch(e.Msg)
	if m == nil {
		return
	}
	for t, kind := range resultKinds {
		if t.String() != m[1] {
			continue
		}
		fields := FieldNames(t)
		e.Msg = fmt.Sprintf("%s has no field %q", kind, m[2])
		e.Hint = "its fields: " + strings.Join(fields, ", ")
		if c := Closest(m[2], fields); c != "" {
			e.Hint = fmt.Sprintf("did you mean %q? %s", c, e.Hint)
		}
		return
	}
}

func envNames(env Env) []string {
	out := make([]string, 0, len(env)+len(functions))
	for k := range env {
		out = append(out, k)
	}
	for k := range functions {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// offsetOf turns expr's 1-based line and 0-based column into a byte offset.
func offsetOf(s string, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	off += col
	if off > len(s) {
		off = len(s)
	}
	if off < 0 {
		off = 0
	}
	return off
}

// normalize rewrites === and !== outside string literals, and returns a map from offsets in the
// result back to offsets in src.
func normalize(src string) (string, func(int) int) {
	var b strings.Builder
	var removed []int // offsets in the output at which one byte of src was dropped
	var quote byte
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case quote != 0:
			if c == '\\' && i+1 < len(src) {
				b.WriteByte(c)
				i++
				c = src[i]
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case (c == '=' || c == '!') && strings.HasPrefix(src[i+1:], "=="):
			b.WriteString(string(c) + "=")
			i += 2
			removed = append(removed, b.Len())
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), func(off int) int {
		n := 0
		for _, r := range removed {
			if r <= off {
				n++
			}
		}
		return off + n
	}
}

// countPatch rewrites x.count(m) into countWhere(x, m): expr has no methods on lists.
type countPatch struct{}

func (countPatch) Visit(node *ast.Node) {
	c, ok := (*node).(*ast.CallNode)
	if !ok {
		return
	}
	m, ok := c.Callee.(*ast.MemberNode)
	if !ok {
		return
	}
	if p, ok := m.Property.(*ast.StringNode); !ok || p.Value != "count" {
		return
	}
	ast.Patch(node, &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: "countWhere"},
		Arguments: append([]ast.Node{m.Node}, c.Arguments...),
	})
}

// countWhere counts the entries of a list whose fields equal every field of the filter; with no
// filter it counts all entries.
func countWhere(params ...any) (any, error) {
	if len(params) == 0 || len(params) > 2 {
		return nil, errors.New("count takes one filter map, as in list.count({accountId: \"a\"})")
	}
	list := reflect.ValueOf(params[0])
	if !list.IsValid() {
		return 0, nil
	}
	if list.Kind() != reflect.Slice && list.Kind() != reflect.Array {
		return nil, fmt.Errorf("count: %s is not a list", Show(params[0]))
	}
	var filter map[string]any
	if len(params) == 2 {
		f, ok := params[1].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("count: filter must be a map like {accountId: \"a\"}, got %s", Show(params[1]))
		}
		filter = f
	}
	n := 0
	for i := range list.Len() {
		if matches(list.Index(i).Interface(), filter) {
			n++
		}
	}
	return n, nil
}

func matches(entry any, filter map[string]any) bool {
	for k, want := range filter {
		got, ok := Field(entry, k)
		if !ok || !Equal(got, want) {
			return false
		}
	}
	return true
}

// Field reads a field of a map value, or of a result struct by the name expressions use.
func Field(v any, name string) (any, bool) {
	if m, ok := v.(map[string]any); ok {
		x, ok := m[name]
		return x, ok
	}
	return structField(reflect.ValueOf(v), name)
}

// Equal compares as expr's == does: numbers by value whatever their Go type.
func Equal(a, b any) bool {
	if fa, ok := toFloat(a); ok {
		if fb, ok := toFloat(b); ok {
			return fa == fb
		}
	}
	return reflect.DeepEqual(a, b)
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Explain evaluates the sub-expressions of a failed assertion and returns a line for each one
// that can be shown: "count(burst.calls, .ok) = 2, want >= 3". Predicate bodies (.ok) are
// skipped: they have no value outside their loop.
func (p *Program) Explain(env map[string]any) []string {
	tree, err := parser.Parse(p.norm)
	if err != nil {
		return nil
	}
	inPredicate := map[ast.Node]bool{}
	ast.Walk(&tree.Node, markPredicates{inPredicate})
	// A method's callee (list.count in list.count({…})) has no value of its own.
	ast.Walk(&tree.Node, visitFunc(func(n *ast.Node) {
		if c, ok := (*n).(*ast.CallNode); ok {
			inPredicate[c.Callee] = true
		}
	}))
	var lines []string
	seen := map[string]bool{}
	eval := func(n ast.Node) (v any, ok bool) {
		defer func() {
			if r := recover(); r != nil {
				v, ok = nil, false // a sub-expression expr cannot handle is not shown
			}
		}()
		prog, err := expr.Compile(n.String(), p.opts...)
		if err != nil {
			return nil, false
		}
		v, err = expr.Run(prog, env)
		if err != nil {
			return "error: " + err.Error(), true
		}
		return v, true
	}
	ast.Walk(&tree.Node, visitFunc(func(node *ast.Node) {
		n := *node
		if inPredicate[n] || n == tree.Node {
			return
		}
		switch n := n.(type) {
		case *ast.BinaryNode:
			switch n.Operator {
			case "==", "!=", "<", ">", "<=", ">=", "in", "not in":
				if isLiteral(n.Left) {
					return
				}
				left, ok := eval(n.Left)
				if !ok {
					return
				}
				key := n.String()
				if seen[key] {
					return
				}
				seen[key] = true
				res, _ := eval(n)
				if res == false {
					lines = append(lines, fmt.Sprintf("%s = %s, want %s %s", n.Left.String(), Show(left), n.Operator, n.Right.String()))
				}
			}
			return
		case *ast.MemberNode, *ast.CallNode, *ast.BuiltinNode:
		default:
			return
		}
		key := n.String()
		if seen[key] {
			return
		}
		// Whole step results and lists of them are noise next to the fields that decide.
		if v, ok := eval(n); ok && !bulky(v) {
			seen[key] = true
			lines = append(lines, fmt.Sprintf("%s = %s", key, Show(v)))
		}
	}))
	// The whole expression's own comparison, if it is one.
	if b, ok := tree.Node.(*ast.BinaryNode); ok {
		switch b.Operator {
		case "==", "!=", "<", ">", "<=", ">=":
			if left, ok := eval(b.Left); ok {
				lines = append(lines, fmt.Sprintf("%s = %s, want %s %s", b.Left.String(), Show(left), b.Operator, b.Right.String()))
			}
		}
	}
	return dropShadowed(lines)
}

// dropShadowed removes "x = v" lines when a "x = v, want …" line says the same and more.
func dropShadowed(lines []string) []string {
	want := map[string]bool{}
	for _, l := range lines {
		if i := strings.Index(l, ", want "); i >= 0 {
			want[l[:i]] = true
		}
	}
	out := lines[:0]
	seen := map[string]bool{}
	for _, l := range lines {
		if (!strings.Contains(l, ", want ") && want[l]) || seen[l] {
			continue
		}
		seen[l] = true
		out = append(out, l)
	}
	return out
}

// bulky reports whether a value is a map, a result or a list of them.
func bulky(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Struct:
		return true
	case reflect.Slice, reflect.Array:
		for i := range rv.Len() {
			switch e := rv.Index(i); e.Kind() {
			case reflect.Map, reflect.Struct:
				return true
			case reflect.Interface:
				if k := e.Elem().Kind(); k == reflect.Map || k == reflect.Struct {
					return true
				}
			}
		}
	}
	return false
}

func isLiteral(n ast.Node) bool {
	switch n.(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.StringNode, *ast.BoolNode, *ast.NilNode:
		return true
	}
	return false
}

type visitFunc func(*ast.Node)

func (f visitFunc) Visit(n *ast.Node) { f(n) }

type markPredicates struct{ m map[ast.Node]bool }

func (v markPredicates) Visit(node *ast.Node) {
	if p, ok := (*node).(*ast.PredicateNode); ok {
		ast.Walk(&p.Node, visitFunc(func(n *ast.Node) { v.m[*n] = true }))
	}
}

// Show formats a value for a report: strings quoted, maps with sorted keys, long values cut.
func Show(v any) string {
	s := show(v)
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

// show is not a jsonvalue walk: it renders for a reader, a long list summarised by its length
// and first items, results by the names expressions give their fields.
func show(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case string:
		return fmt.Sprintf("%q", x)
	case map[string]any:
		keys := jsonvalue.SortedKeys(x)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + show(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		// A long list is summarised: its length and its first entries are what a reader needs.
		const shown = 4
		parts := make([]string, 0, min(len(x), shown))
		for _, e := range x[:min(len(x), shown)] {
			parts = append(parts, show(e))
		}
		if len(x) > shown {
			return fmt.Sprintf("[%d items: %s, …]", len(x), strings.Join(parts, ", "))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	// Results and lists of them are shown as the expressions name their fields.
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Struct:
		return show(structMap(rv))
	case reflect.Pointer:
		if rv.IsNil() {
			return "nil"
		}
		return show(rv.Elem().Interface())
	case reflect.Slice:
		if rv.IsNil() {
			return "[]"
		}
		list := make([]any, rv.Len())
		for i := range list {
			list[i] = rv.Index(i).Interface()
		}
		return show(list)
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			m := make(map[string]any, rv.Len())
			for it := rv.MapRange(); it.Next(); {
				m[it.Key().String()] = it.Value().Interface()
			}
			return show(m)
		}
	}
	return fmt.Sprint(v)
}
