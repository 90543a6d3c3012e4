package assert

import (
	"fmt"
	"sort"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// ResultPath is a field an expression reads from a call step's decoded answer: the refundId
// of first.result.refundId. A field the answer does not have reads as nil, so a typo
// (first.result.refundID == retry.result.refundID) makes an assertion true whatever the server
// did; the runner warns when a path is missing from every answer it was read from.
type ResultPath struct {
	Step   string
	Fields []string
	// Offset is where the path starts in the source as written.
	Offset int
}

// String is the path as written: first.result.refundId.
func (r ResultPath) String() string {
	return r.Step + ".result." + strings.Join(r.Fields, ".")
}

// ResultPaths lists the longest paths the expression reads from call steps' answers, written
// as STEP.result.FIELD…, each once.
func (p *Program) ResultPaths() []ResultPath {
	tree, err := parser.Parse(p.norm)
	if err != nil {
		return nil
	}
	var all []ResultPath
	ast.Walk(&tree.Node, visitFunc(func(n *ast.Node) {
		if rp, ok := resultPath(*n); ok {
			rp.Offset = p.back(rp.Offset)
			all = append(all, rp)
		}
	}))
	seen := map[string]bool{}
	var out []ResultPath
	for _, rp := range all {
		s := rp.String()
		longer := false
		for _, o := range all {
			if o.Step == rp.Step && len(o.Fields) > len(rp.Fields) && strings.HasPrefix(o.String(), s+".") {
				longer = true
			}
		}
		if !longer && !seen[s] {
			seen[s] = true
			out = append(out, rp)
		}
	}
	return out
}

// resultPath reads STEP.result.A.B from a chain of member nodes with constant names.
func resultPath(n ast.Node) (ResultPath, bool) {
	var fields []string
	for {
		m, ok := n.(*ast.MemberNode)
		if !ok {
			break
		}
		s, ok := m.Property.(*ast.StringNode)
		if !ok || m.Optional || m.Method {
			// first.result?.note says the field may be absent; a method is no field.
			return ResultPath{}, false
		}
		fields = append([]string{s.Value}, fields...)
		n = m.Node
	}
	id, ok := n.(*ast.IdentifierNode)
	if !ok || len(fields) < 2 || fields[0] != "result" {
		return ResultPath{}, false
	}
	return ResultPath{Step: id.Value, Fields: fields[1:], Offset: id.Location().From}, true
}

// Absence is a result path an answer did not have.
type Absence struct {
	// Field is the first field of the path the answer lacks; Have the fields it has there.
	Field string
	Have  []string
}

// Hint suggests the field the path probably meant: did you mean "refundId"?
func (a Absence) Hint() string {
	if c := Closest(a.Field, a.Have); c != "" {
		return fmt.Sprintf("did you mean %s?", c)
	}
	if len(a.Have) > 0 && len(a.Have) <= 8 {
		return "the answers have " + strings.Join(a.Have, ", ")
	}
	return ""
}

// Lookup reads the path in env's answer. known is false when env cannot tell: no call result
// for the step, no answer (a lost or failed call), or a value on the way that is not an
// object. Otherwise found says whether the answer has the path, and when it does not, absent
// says where it stops.
func (r ResultPath) Lookup(env map[string]any) (found bool, absent Absence, known bool) {
	var v any
	switch c := env[r.Step].(type) {
	case CallResult:
		v = c.Result
	case *CallResult:
		if c == nil {
			return false, Absence{}, false
		}
		v = c.Result
	default:
		return false, Absence{}, false
	}
	for _, f := range r.Fields {
		m, ok := v.(map[string]any)
		if !ok {
			return false, Absence{}, false
		}
		e, ok := m[f]
		if !ok {
			have := make([]string, 0, len(m))
			for k := range m {
				have = append(have, k)
			}
			sort.Strings(have)
			return false, Absence{Field: f, Have: have}, true
		}
		v = e
	}
	return true, Absence{}, true
}
