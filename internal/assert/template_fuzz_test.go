package assert

import (
	"errors"
	"strings"
	"testing"
)

// FuzzTemplate compiles and renders arbitrary template strings, as scenario files and values
// from servers feed them: no input may panic, a compile error points inside the template, and
// text without {{ renders as itself.
func FuzzTemplate(f *testing.F) {
	for _, seed := range []string{
		"plain", "", "{{ session }}", "acct_{{ session }}-{{ trial }}", "{{ one.result.refundId }}",
		"{{ one.result }}!", "{{ one.result.list[5] }}", "{{ pp.refunds.count({a: 1}) }}", "{{ uuid() }} {{ now() }}",
		"{{", "}}", "{{}}", "{{ }}", "{{ {{ }} }}", "a {{ nope }} b", "{{ 1/0 }}", "{{ one.result.x.y.z }}",
		"{{ \"}}\" }}", "{{ one.result.refundId + \"\x1b\u202e\" }}", "{{ len(one.result.list) == 2 ? 'a' : 'b' }}",
		"${VAR} {tool} {{ trial * 2 }}", "\xff{{ session }}\xfe",
	} {
		f.Add(seed)
	}
	decl := Env{"one": map[string]any{}, "session": "", "trial": 0, "pp": Dynamic}
	env := map[string]any{
		"one":     map[string]any{"ok": true, "result": map[string]any{"refundId": "re_1", "list": []any{1.0, "x"}}},
		"session": "s1", "trial": 1,
		"pp": map[string]any{"refunds": []any{map[string]any{"a": 1.0}}},
	}
	f.Fuzz(func(t *testing.T, src string) {
		// Ranges and repeats build values as large as they ask for: not a parser's problem.
		if len(src) > 512 || strings.Contains(src, "..") || strings.Contains(src, "repeat") {
			return
		}
		tpl, err := CompileTemplate(src, decl)
		if err != nil {
			var e *Error
			if errors.As(err, &e) && (e.Offset < 0 || e.Offset > len(src)) {
				t.Fatalf("error offset %d outside the template (%d bytes): %v", e.Offset, len(src), err)
			}
			return
		}
		for _, m := range tpl.Members() {
			if m.Offset < 0 || m.Offset > len(src) {
				t.Fatalf("member %+v outside the template (%d bytes)", m, len(src))
			}
		}
		v, err := tpl.Eval(env)
		if !HasTemplate(src) && (err != nil || (src != "" && v != src)) {
			t.Fatalf("text without {{ renders as %#v, %v", v, err)
		}
		_ = Text(v)
	})
}
