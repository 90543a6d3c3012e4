//go:build unix

package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImportsPointOneWay holds the layout docs/layout.md's table and DESIGN §6 describe: the leaf
// packages import nothing of ours beyond what is listed, and only probe (and the reference
// server's stores) talk to PostgreSQL and Redis.
func TestImportsPointOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/idemtest/idemtest/"
	leaves := map[string][]string{
		"internal/endpoint":    {"internal/netguard", "internal/outcome", "internal/dispatch", "internal/jsonvalue"},
		"internal/sink":        nil,
		"internal/jsonvalue":   nil,
		"internal/verdict":     {"internal/jsonvalue"},
		"internal/assert":      {"internal/jsonvalue"},
		"internal/outcome":     nil,
		"internal/dispatch":    nil,
		"internal/safejson":    nil,
		"internal/plural":      nil,
		"internal/safefile":    nil,
		"internal/regularfile": nil,
		"internal/ctxwait":     nil,
		"internal/matrix":      nil,
		// check and init (scaffold) both read input schemas through synth.
		"internal/check/synth": nil,
	}
	// Who may import whom beyond the leaves: sweep shares check's evidence packages, which live
	// beside it (scenariogen, stateview, explain), so it never imports check itself. The
	// reporters render check's and sweep's reports through matrix.Matrix, never the producers'
	// types; only the JSON writer embeds the report structs, whose fields are the format.
	forbidden := map[string][]string{
		"internal/sweep":              {"internal/check"},
		"internal/scenariogen":        {"internal/check", "internal/sweep"},
		"internal/stateview":          {"internal/check", "internal/sweep"},
		"internal/explain":            {"internal/check", "internal/sweep"},
		"internal/reporters":          {"internal/check", "internal/sweep"},
		"internal/reporters/terminal": {"internal/check", "internal/sweep"},
		"internal/reporters/junit":    {"internal/check", "internal/sweep"},
		"internal/reporters/html":     {"internal/check", "internal/sweep"},
		"internal/reporters/github":   {"internal/check", "internal/sweep"},
	}
	drivers := []string{"github.com/jackc/pgx", "github.com/redis/go-redis", "modernc.org/sqlite"}
	seen, ruled := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		allowed, leaf := leaves[pkg]
		if leaf {
			seen++
		}
		if _, ok := forbidden[pkg]; ok {
			ruled++
		}
		for _, imp := range fields[1:] {
			ours, isOurs := strings.CutPrefix(imp, mod)
			for _, f := range forbidden[pkg] {
				if isOurs && (ours == f || strings.HasPrefix(ours, f+"/")) {
					t.Errorf("%s imports %s: it may not import %s", pkg, ours, f)
				}
			}
			if leaf && isOurs && !slices.Contains(allowed, ours) {
				t.Errorf("%s imports %s: it may import only %v of ours", pkg, ours, allowed)
			}
			for _, d := range drivers {
				if strings.HasPrefix(imp, d) && pkg != "internal/probe" && pkg != "examples/refundserver" {
					t.Errorf("%s imports %s: only internal/probe talks to databases", pkg, imp)
				}
			}
		}
	}
	if seen != len(leaves) {
		t.Errorf("found %d of the %d leaf packages: the table above is out of date", seen, len(leaves))
	}
	if ruled != len(forbidden) {
		t.Errorf("found %d of the %d packages with forbidden imports: the table above is out of date", ruled, len(forbidden))
	}
}

// TestOneHomePerWord holds the vocabulary to one name per concept: no package re-exports a
// word of the shared vocabulary (outcome, dispatch, matrix) under an alias, and no exported
// type is an alias of another (type HostError = netguard.HostError), so every use reads
// outcome.OK, dispatch.SyncLastByte, matrix.Fail, netguard.HostError.
func TestOneHomePerWord(t *testing.T) {
	homes := map[string]bool{"outcome": true, "dispatch": true, "matrix": true}
	fset := token.NewFileSet()
	eachGoFile(t, fset, func(_ string, f *ast.File) {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					if sp.Assign.IsValid() && sp.Name.IsExported() {
						t.Errorf("%s: type %s is an alias of %s: import it from its home instead", fset.Position(sp.Pos()), sp.Name.Name, types.ExprString(sp.Type))
					}
				case *ast.ValueSpec:
					for i, v := range sp.Values {
						if i < len(sp.Names) && sp.Names[i].IsExported() && reexports(v, homes) {
							t.Errorf("%s: %s re-exports %s: import it from its home instead", fset.Position(sp.Pos()), sp.Names[i].Name, types.ExprString(v))
						}
					}
				}
			}
		}
	})
}

// eachGoFile parses every Go file of the module (hidden folders, testdata and node_modules
// left out) and gives it to fn with its slash path.
func eachGoFile(t *testing.T, fset *token.FileSet, fn func(path string, f *ast.File)) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(path), f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// reexports reports whether e is a bare selector of a vocabulary home's exported name
// (outcome.OK, matrix.Status) or the battery's Cell.
func reexports(e ast.Expr, homes map[string]bool) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || !sel.Sel.IsExported() {
		return false
	}
	return homes[pkg.Name] || (pkg.Name == "battery" && sel.Sel.Name == "Cell")
}

// jsonWalkers are the type switches over both a decoded object and a decoded list that live
// outside internal/jsonvalue, by file and function, each with why it is not jsonvalue's. Every
// other walk over a decoded JSON value goes through jsonvalue (Walk, Map, Any, Lookup,
// Without…), so that a dotted path and compare.ignore mean one thing everywhere (issue #24).
var jsonWalkers = map[string]string{
	"internal/endpoint/detail.go errorText":                    "searches an error body's named fields for the server's message, to a bounded depth",
	"internal/endpoint/detail.go objectText":                   "the same search, inside one error object",
	"internal/assert/assert.go show":                           "renders for a reader: a long list summarised, results by their expression names",
	"internal/assert/template.go Text":                         "encodes a map or list whole for a template, walks nothing",
	"internal/scaffold/scaffold.go other":                      "follows one path (last element, first field) to change one leaf",
	"internal/redact/redact.go Value":                          "rewrites object keys as well as leaves (a secret can be a key), which jsonvalue.Map leaves alone",
	"internal/reportschema/schemacheck/schemacheck.go valueAt": "follows a JSON Pointer's tokens from a schema error, not a dotted path",
}

// TestJSONWalkersLiveInJSONValue fails when a non-test file outside internal/jsonvalue has a
// type switch with both a map[string]any and a []any case that jsonWalkers does not justify,
// and when a justified one is gone (the list would then excuse a new one).
func TestJSONWalkersLiveInJSONValue(t *testing.T) {
	fset := token.NewFileSet()
	found := map[string]bool{}
	eachGoFile(t, fset, func(path string, f *ast.File) {
		if strings.HasPrefix(path, "internal/jsonvalue/") || strings.HasSuffix(path, "_test.go") {
			return
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sw, ok := n.(*ast.TypeSwitchStmt)
				if !ok || !switchesOnJSON(sw) {
					return true
				}
				at := path + " " + fn.Name.Name
				found[at] = true
				if _, ok := jsonWalkers[at]; !ok {
					t.Errorf("%s: %s walks a decoded JSON value: use internal/jsonvalue (add the primitive it lacks), or list it in jsonWalkers with why it is not jsonvalue's", fset.Position(sw.Pos()), fn.Name.Name)
				}
				return true
			})
		}
	})
	for at := range jsonWalkers {
		if !found[at] {
			t.Errorf("jsonWalkers lists %s, which has no such type switch any more: drop it from the list", at)
		}
	}
}

// switchesOnJSON reports whether a type switch has a case for a decoded object
// (map[string]any or map[string]interface{}) and one for a decoded list ([]any).
func switchesOnJSON(sw *ast.TypeSwitchStmt) bool {
	var object, list bool
	for _, c := range sw.Body.List {
		for _, e := range c.(*ast.CaseClause).List {
			switch types.ExprString(e) {
			case "map[string]any", "map[string]interface{}":
				object = true
			case "[]any", "[]interface{}":
				list = true
			}
		}
	}
	return object && list
}
