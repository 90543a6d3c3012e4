package schema

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// unread are the keys the decoder accepts and deliberately keeps nothing of.
var unread = map[string]string{
	"Scenario.description": "prose for the scenario's readers",
}

// TestDecoderReadsExactlyTheListedKeys reads package decode's source: for each section, the
// keys its f.fields(…, schema.Section) mapping is indexed with (in that function and in the
// ones the mapping is passed to) are exactly the section's keys, so a key is neither accepted
// and then ignored, nor read but refused as unknown.
func TestDecoderReadsExactlyTheListedKeys(t *testing.T) {
	fset := token.NewFileSet()
	paths, _ := filepath.Glob("../decode/*.go")
	funcs := map[string]*ast.FuncDecl{}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				funcs[fd.Name.Name] = fd
			}
		}
	}
	if len(funcs) < 20 {
		t.Fatalf("found %d functions in ../decode: the decoder has moved", len(funcs))
	}
	read := map[string]map[string]bool{} // section → keys
	for _, fd := range funcs {
		// The stack of nodes down to the current one: a variable's scope is the innermost
		// block, case or if statement around its declaration.
		var stack []ast.Node
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			stack = append(stack, n)
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Rhs) != 1 {
				return true
			}
			sec := fieldsCall(as.Rhs[0])
			v, ok := as.Lhs[0].(*ast.Ident)
			if sec == "" || !ok {
				return true
			}
			var scope ast.Node = fd.Body
			for i := len(stack) - 2; i >= 0; i-- {
				switch stack[i].(type) {
				case *ast.BlockStmt, *ast.CaseClause, *ast.IfStmt:
					scope = stack[i]
				default:
					continue
				}
				break
			}
			if read[sec] == nil {
				read[sec] = map[string]bool{}
			}
			keysRead(funcs, scope, v.Name, read[sec], map[string]bool{})
			return true
		})
	}
	for name, sec := range sections {
		t.Run(name, func(t *testing.T) {
			got := read[name]
			if name == "SeedStep" {
				// The hosted-runner keys are renamed to a call step's (tool to call_tool, …).
				got = map[string]bool{}
				for _, k := range stringLits(funcs["seedStep"]) {
					got[k] = true
				}
				for _, k := range CallStep.Names() {
					got[k] = true
				}
			} else if got == nil {
				t.Fatalf("no f.fields(…, schema.%s) in package decode", name)
			}
			for _, k := range sec.Names() {
				if !got[k] && unread[name+"."+k] == "" {
					t.Errorf("%s lists %q but the decoder never reads it", name, k)
				}
			}
			if name == "SeedStep" {
				return
			}
			for k := range got {
				if !slices.Contains(sec.Names(), k) {
					t.Errorf("the decoder reads %q, which %s does not list (so it is refused as unknown)", k, name)
				}
			}
		})
	}
}

// fieldsCall returns SECTION when e is x.fields(n, what, schema.SECTION).
func fieldsCall(e ast.Expr) string {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 3 {
		return ""
	}
	if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "fields" {
		return ""
	}
	sel, ok := call.Args[2].(*ast.SelectorExpr)
	if x, isIdent := sel.X.(*ast.Ident); !ok || !isIdent || x.Name != "schema" {
		return ""
	}
	return sel.Sel.Name
}

// keysRead adds the string keys the variable v is indexed with in scope, following v into the
// package's functions it is passed to; m[k] with k ranging over a list of strings counts each.
func keysRead(funcs map[string]*ast.FuncDecl, scope ast.Node, v string, out map[string]bool, seen map[string]bool) {
	id := fmt.Sprintf("%p.%s", scope, v)
	if seen[id] {
		return
	}
	seen[id] = true
	ranges := map[string][]string{}
	ast.Inspect(scope, func(n ast.Node) bool {
		if r, ok := n.(*ast.RangeStmt); ok {
			if id, ok := r.Value.(*ast.Ident); ok {
				ranges[id.Name] = append(ranges[id.Name], stringLits(r.X)...)
			}
		}
		return true
	})
	ast.Inspect(scope, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IndexExpr:
			if x, ok := n.X.(*ast.Ident); !ok || x.Name != v {
				return true
			}
			switch i := n.Index.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(i.Value); err == nil {
					out[s] = true
				}
			case *ast.Ident:
				for _, s := range ranges[i.Name] {
					out[s] = true
				}
			}
		case *ast.CallExpr:
			var callee string
			switch fn := n.Fun.(type) {
			case *ast.Ident:
				callee = fn.Name
			case *ast.SelectorExpr:
				callee = fn.Sel.Name
			}
			g := funcs[callee]
			if g == nil {
				return true
			}
			var params []string
			for _, fl := range g.Type.Params.List {
				for _, nm := range fl.Names {
					params = append(params, nm.Name)
				}
			}
			for i, a := range n.Args {
				if id, ok := a.(*ast.Ident); ok && id.Name == v && i < len(params) {
					keysRead(funcs, g.Body, params[i], out, seen)
				}
			}
		}
		return true
	})
}

// stringLits returns the string literals under n.
func stringLits(n ast.Node) []string {
	var out []string
	if n == nil {
		return nil
	}
	ast.Inspect(n, func(n ast.Node) bool {
		if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
			if s, err := strconv.Unquote(l.Value); err == nil {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}
