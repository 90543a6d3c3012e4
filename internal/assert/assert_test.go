package assert

import (
	"errors"
	"strings"
	"testing"
)

func testEnv() map[string]any {
	return map[string]any{
		"burst": FanoutResult{
			Calls: []CopyResult{
				{CallResult: CallResult{OK: true, Status: 200, Result: map[string]any{"refundId": "re_1"}}},
				{CallResult: CallResult{OK: true, Status: 200, Result: map[string]any{"refundId": "re_2"}}},
				{CallResult: CallResult{Status: 409, Conflict: true}},
			},
			OK: 2, Conflict: 1,
		},
		"first":   CallResult{OK: true, Status: 200, Headers: map[string]string{"Idempotent-Replayed": "true"}},
		"pp":      map[string]any{"refunds": []any{map[string]any{"accountId": "a", "amount": 10.0}, map[string]any{"accountId": "b", "amount": 3.0}}},
		"session": "s1",
	}
}

// testDecl declares testEnv's names as the loader does: results typed, sinks dynamic.
func testDecl() Env {
	return Env{"burst": FanoutResult{}, "first": CallResult{}, "pp": map[string]any{}, "session": ""}
}

func TestCompileAndRun(t *testing.T) {
	env := testEnv()
	decl := testDecl()
	for _, tc := range []struct {
		name, src string
		want      bool
	}{
		{"count builtin", `count(burst.calls, .ok) >= 1`, true},
		{"uniq over results", `len(uniq(map(filter(burst.calls, .ok), .result.refundId))) == 1`, false},
		{"triple equals", `pp.refunds.count({accountId: "a"}) === 1`, true},
		{"not triple equals", `pp.refunds.count({ accountId: "a" }) !== 1`, false},
		{"count matches numbers by value", `pp.refunds.count({amount: 10}) == 1`, true},
		{"triple equals inside a string is text", `"a===b" == "a===b"`, true},
		{"session", `session == "s1"`, true},
		{"seed count over typed copies", `burst.calls.count({ok: true, status: 200}) == 2`, true},
		{"predicate with #", `any(burst.calls, #.conflict && #.status == 409)`, true},
		{"typed counts", `burst.ok + burst.conflict == 3 && burst.fail == 0`, true},
		{"unset copy timing is nil", `burst.calls[0].released_us == nil`, true},
		{"headers", `first.headers["Idempotent-Replayed"] == "true" && first.headers["nope"] == ""`, true},
		{"dynamic result", `first.result == nil && burst.calls[1].result.refundId == "re_2"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile(tc.src, decl)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Bool(env)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		offset    int
		msg       string
	}{
		{"unknown name", `burst.ok == 1 && nope.x == 1`, 17, "unknown name nope"},
		{"unknown name after ===", `pp.refunds === 1 && nope`, 20, "unknown name nope"},
		{"syntax", `burst.ok ==`, 10, "unexpected token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.src, Names("burst", "pp"))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if e.Offset != tc.offset || !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("got offset %d %q, want %d %q", e.Offset, e.Msg, tc.offset, tc.msg)
			}
		})
	}
}

// TestFieldTypos: a field that the result types lack is a compile error wherever it is read,
// with the field most likely meant.
func TestFieldTypos(t *testing.T) {
	for _, tc := range []struct {
		src, msg, hint string
		offset         int
	}{
		{`burst.calls[0].replayd != true`, `a fan-out copy has no field "replayd"`, `did you mean "replayed"?`, 15},
		{`none(burst.calls, .stauts == 500)`, `a fan-out copy has no field "stauts"`, `did you mean "status"?`, 19},
		{`burst.conflicts == nil`, `a fan-out result has no field "conflicts"`, `did you mean "conflict"?`, 6},
		{`first.okk`, `a call result has no field "okk"`, `did you mean "ok"?`, 6},
		{`map(burst.calls, #.releasd_us)`, `a fan-out copy has no field "releasd_us"`, `did you mean "released_us"?`, 19},
		{`count(filter(burst.calls, .ok), .atempts > 1)`, `a fan-out copy has no field "atempts"`, `did you mean "attempts"?`, 33},
		{`first.ok === true && first.xyzzy`, `a call result has no field "xyzzy"`, "its fields: attempts,", 27},
		{`frist.ok`, "unknown name frist", `did you mean "first"?`, 0},
	} {
		t.Run(tc.src, func(t *testing.T) {
			_, err := Compile(tc.src, testDecl())
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if e.Msg != tc.msg || !strings.HasPrefix(e.Hint, tc.hint) || e.Offset != tc.offset {
				t.Errorf("got %d %q (%s), want %d %q (%s)", e.Offset, e.Msg, e.Hint, tc.offset, tc.msg, tc.hint)
			}
		})
	}
}

func TestShowTypedResults(t *testing.T) {
	env := testEnv()
	got := Show(env["first"])
	want := `{attempts: 0, conflict: false, duration_ms: 0, error: "", headers: {Idempotent-Replayed: "true"}, key: "", lost: false, ok: true, outcome: "", replayed: false, result: nil, status: 200}`
	if got != want {
		t.Errorf("Show = %s\nwant   %s", got, want)
	}
	us := 5.5
	if got := Show([]CopyResult{{ReleasedUS: &us}}); !strings.Contains(got, "released_us: 5.5") || !strings.Contains(got, "answered_us: nil") {
		t.Errorf("Show copies = %s", got)
	}
	if got := Show(&us); got != "5.5" {
		t.Errorf("Show pointer = %s", got)
	}
	if got := Text(env["first"]); !strings.Contains(got, `"duration_ms":0`) || !strings.Contains(got, `"ok":true`) {
		t.Errorf("Text = %s", got)
	}
}

func TestExplain(t *testing.T) {
	p, err := Compile(`count(burst.calls, .ok) >= 3 && len(uniq(map(filter(burst.calls, .ok), .result.refundId))) == 1`, testDecl())
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(p.Explain(testEnv()), "\n")
	for _, want := range []string{
		"count(burst.calls, .ok) = 2, want >= 3",
		`len(uniq(map(filter(burst.calls, .ok), .result.refundId))) = 2, want == 1`,
		`uniq(map(filter(burst.calls, .ok), .result.refundId)) = ["re_1", "re_2"]`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("explanation lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\n.ok") || strings.HasPrefix(got, ".ok") {
		t.Errorf("explanation shows a predicate body:\n%s", got)
	}
}

func TestTemplate(t *testing.T) {
	env := testEnv()
	for _, tc := range []struct {
		src  string
		want any
	}{
		{`{{ burst.ok }}`, 2},
		{`n={{ burst.ok }} s={{session}}`, "n=2 s=s1"},
		{`plain`, "plain"},
		{`{{ burst.calls[0].result }}!`, `{"refundId":"re_1"}!`},
	} {
		tpl, err := CompileTemplate(tc.src, testDecl())
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		got, err := tpl.Eval(env)
		if err != nil || got != tc.want {
			t.Errorf("%s = %#v, %v; want %#v", tc.src, got, err, tc.want)
		}
	}
	_, err := CompileTemplate(`ab {{ nope }}`, Env{})
	var e *Error
	if !errors.As(err, &e) || e.Offset != 6 {
		t.Errorf("template error %v, want offset 6", err)
	}
	if _, err := CompileTemplate(`ab {{ x`, Env{}); err == nil {
		t.Error("unclosed {{ accepted")
	}
}

func TestUsesAndMembers(t *testing.T) {
	p, err := Compile(`pp.refunds.count({a: 1}) === 1 && pp.nope == 2 && first.ok`, Names("pp", "first"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Uses("pp") || !p.Uses("first") || p.Uses("other") {
		t.Error("Uses")
	}
	ms := p.Members()
	got := []string{}
	for _, m := range ms {
		got = append(got, m.Name+"."+m.Field+"@"+string(rune('0'+m.Offset/10))+string(rune('0'+m.Offset%10)))
	}
	want := "pp.refunds@03 pp.nope@37 first.ok@56"
	if strings.Join(got, " ") != want {
		t.Errorf("members %v, want %s", got, want)
	}
}

func TestDynamicNames(t *testing.T) {
	env := Env{"rows": Dynamic, "keys": Dynamic}
	for _, src := range []string{`rows[0].n == 1`, `len(rows) == 1`, `keys.count({a: 1}) == 0`, `let x = 1; x == 1`, `uuid() != ""`} {
		if _, err := Compile(src, env); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	p, _ := Compile(`rows[0].n == 1`, env)
	if ok, err := p.Bool(map[string]any{"rows": []any{map[string]any{"n": 1}}}); !ok || err != nil {
		t.Errorf("dynamic value: %v %v", ok, err)
	}
	if _, err := Compile(`rowz[0].n == 1`, env); err == nil || !strings.Contains(err.Error(), "unknown name rowz") {
		t.Errorf("typo accepted: %v", err)
	}
}

// TestLibraryPanicIsAnError turns expr's optimizer back on, under which expr v1.17.8 panics
// compiling a field read on filter(...)[0]: the panic must come back as an error at the
// expression's start with an idiom that works, never as a stack trace.
func TestLibraryPanicIsAnError(t *testing.T) {
	optimize = true
	defer func() { optimize = false }()
	src := `filter(burst.calls, .ok)[0].result.refundId != ""`
	_, err := Compile(src, testDecl())
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if e.Offset != 0 || strings.Contains(e.Msg, "goroutine") || strings.Contains(e.Msg, "\n") {
		t.Errorf("error = %d %q, want offset 0 and one line without a stack trace", e.Offset, e.Msg)
	}
	if !strings.Contains(e.Hint, "first(filter(") {
		t.Errorf("hint = %q, want the idiom that works", e.Hint)
	}
	// With the optimizer off, as idemtest compiles, the expression compiles and is true.
	optimize = false
	p, err := Compile(src, testDecl())
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := p.Bool(testEnv()); err != nil || !ok {
		t.Errorf("= %v, %v; want true", ok, err)
	}
}
