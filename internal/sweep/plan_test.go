package sweep

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/trace"
)

// A recorded argument that itself contains {{ }} (an agent writing a template file) is sent as
// recorded, not evaluated as the run's template; a carried value next to it still is.
func TestPlanKeepsLiteralBraces(t *testing.T) {
	literals := []string{"Hello {{ name }}!", "{{", "}}{{x}}", "a{{ \"q\" }}b\n\\", "{{{}}}", "é {{ ü }}"}
	calls := []trace.Call{
		{Seq: 1, Tool: "create_doc", Mutating: true, Args: json.RawMessage(`{}`), Outcome: "ok", Result: json.RawMessage(`{"docId":"d_rec"}`)},
	}
	args := map[string]any{"docId": "d_rec", "texts": literals}
	b, _ := json.Marshal(args)
	calls = append(calls, trace.Call{Seq: 2, Tool: "write_doc", Mutating: true, Args: b, Outcome: "ok"})
	p, err := newPlan(context.Background(), calls, "")
	if err != nil {
		t.Fatal(err)
	}
	r := run{fault: LostResponse, call: p.calls[0]}
	steps := r.steps(p)
	var st scenariogen.Step
	for _, s := range steps {
		if s.ID == "c2" {
			st = s
		}
	}
	env := map[string]any{"c1_retry": map[string]any{"result": map[string]any{"docId": "d_run"}}}
	eval := func(v any) any {
		t.Helper()
		s, ok := v.(string)
		if !ok || !assert.HasTemplate(s) {
			return v
		}
		tpl, err := assert.CompileTemplate(s, assert.Env(env))
		if err != nil {
			t.Fatalf("%q does not compile: %v", s, err)
		}
		out, err := tpl.Eval(env)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return out
	}
	if got := eval(st.Args["docId"]); got != "d_run" {
		t.Errorf("docId = %v, want the run's d_run", got)
	}
	texts, _ := st.Args["texts"].([]any)
	for i, want := range literals {
		if got := eval(texts[i]); got != want {
			t.Errorf("text %d = %q (sent as %q), want %q", i, got, texts[i], want)
		}
	}
	// A read-only call's state read before the run is sent as recorded too.
	b, _ = json.Marshal(map[string]any{"pattern": "{{ name }}"})
	calls = append(calls, trace.Call{Seq: 3, Tool: "find_docs", Args: b, Outcome: "ok"})
	if p, err = newPlan(context.Background(), calls, ""); err != nil {
		t.Fatal(err)
	}
	sw := &sweeper{plan: p, def: &scenario.Endpoint{Name: "e"}}
	for _, s := range sw.spec(run{fault: Clean}, true).Steps {
		if s.ID == "c3_before" || s.ID == "c3" {
			if got := eval(s.Args["pattern"]); got != "{{ name }}" {
				t.Errorf("%s pattern = %q (sent as %q)", s.ID, got, s.Args["pattern"])
			}
		}
	}
	// The loader compiles every argument as the runner will.
	sp := &scenariogen.Spec{Endpoint: "e", Steps: steps, Tool: "t", Check: r.fault}
	if _, err := sp.Scenario(&scenario.Scenario{}); err != nil {
		t.Fatal(err)
	}
}

func TestPlanSessionScopedArguments(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	calls := []trace.Call{
		{Seq: 1, Tool: "issue_refund", Args: raw(`{"accountId":"acct_tr7x","memo":"{tr7x}"}`), Key: "tr7x-0", KeyCarrier: "header Idempotency-Key", Mutating: true, Outcome: "ok", Scenario: "s", Trial: 1},
		{Seq: 2, Tool: "list_refunds", Args: raw(`{"accountId":"acct_tr7x"}`), Outcome: "ok", Scenario: "s", Trial: 1},
	}
	p, err := newPlan(context.Background(), calls, "")
	if err != nil {
		t.Fatal(err)
	}
	steps := run{fault: Clean}.steps(p)
	want := `{"accountId":"{{ \"acct_\" + session }}","memo":"{{ \"{\" + session + \"}\" }}"}`
	if got := jsonvalue.Canonical(steps[0].Args); got != want {
		t.Errorf("call 1 args = %s, want %s", got, want)
	}
	if got := jsonvalue.Canonical(steps[1].Args); got != `{"accountId":"{{ \"acct_\" + session }}"}` {
		t.Errorf("call 2 args = %s", got)
	}
	// The templates compile as the loader compiles them.
	sp := &scenariogen.Spec{Endpoint: "e", Steps: steps, Tool: "t", Check: Clean}
	if _, err := sp.Scenario(&scenario.Scenario{}); err != nil {
		t.Fatal(err)
	}
	// A proxy's trace: the keys are the agent's, nothing is a session.
	for i := range calls {
		calls[i].Scenario = ""
	}
	p, _ = newPlan(context.Background(), calls, "")
	if got := jsonvalue.Canonical(run{fault: Clean}.steps(p)[0].Args); got != `{"accountId":"acct_tr7x","memo":"{tr7x}"}` {
		t.Errorf("proxy trace args = %s", got)
	}
}
