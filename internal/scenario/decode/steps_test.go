package decode

import (
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenario"
)

// withSteps is a scenario whose steps are lines; its first step is on line 3.
func withSteps(lines string) string { return "name: s\nsteps:\n" + lines }

// TestCallStep decodes a call step with every field set, and the defaults of one with none.
func TestCallStep(t *testing.T) {
	s, errs := scenarioOf(t, withSteps(`  - id: first
    call_tool: issue_refund
    endpoint: refunds
    args: {accountId: "acct_{{ session }}", amount: 5, tags: [a, "{{ trial }}"], nested: {n: 1}}
    key: "k-{{ session }}"
    lose_response: true
    verdict: "off"
  - id: burst
    retry_of: first
    fanout: 8
    sync: barrier
    stagger: 100us..2ms
    timeout: 250ms
    expect: ok
  - call_tool: issue_refund
    retry: {attempts: 4, on: [5xx, fail], backoff: 10ms}
  - call_tool: issue_refund
    without_key: true
  - call_tool: issue_refund
`))
	if len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	first, burst, retry, nokey, plain := s.Steps[0], s.Steps[1], s.Steps[2], s.Steps[3], s.Steps[4]
	if first.Kind != scenario.CallStep || first.ID != "first" || first.Pos.Line != 3 || first.Pos.Col != 9 || first.Index != 0 {
		t.Errorf("first: kind %v id %q at %v", first.Kind, first.ID, first.Pos)
	}
	if first.Tool != "issue_refund" || first.Endpoint != "refunds" || first.EndpointPos.Line != 5 || first.EndpointPos.Col != 15 {
		t.Errorf("first: tool %q endpoint %q at %v", first.Tool, first.Endpoint, first.EndpointPos)
	}
	args := first.Args.(map[string]any)
	if tmpl, ok := args["accountId"].(*assert.Template); !ok || tmpl.Source != "acct_{{ session }}" || args["amount"] != 5 {
		t.Errorf("first: args %#v", args)
	}
	if tags := args["tags"].([]any); tags[0] != "a" {
		t.Errorf("first: a list argument %#v", tags)
	} else if _, ok := tags[1].(*assert.Template); !ok {
		t.Errorf("first: a template inside a list %#v", tags[1])
	}
	if nested := args["nested"].(map[string]any); nested["n"] != 1 {
		t.Errorf("first: nested %#v", nested)
	}
	if first.Key == nil || first.Key.Source != "k-{{ session }}" || !first.LoseResponse || !first.VerdictOff || first.Expect != outcome.Info || first.Fanout != 1 {
		t.Errorf("first: %+v", first)
	}
	if burst.RetryOf != "first" || burst.RetryOfPos.Line != 11 || burst.Tool != "" || burst.Fanout != 8 || burst.Sync != dispatch.SyncBarrier || burst.SyncPos.Line != 13 {
		t.Errorf("burst: %+v", burst)
	}
	if burst.StaggerMin != 100*time.Microsecond || burst.StaggerMax != 2*time.Millisecond || burst.Timeout != 250*time.Millisecond || burst.Expect != outcome.OK {
		t.Errorf("burst: stagger %v..%v timeout %v expect %v", burst.StaggerMin, burst.StaggerMax, burst.Timeout, burst.Expect)
	}
	if r := retry.Retry; r == nil || r.Attempts != 4 || r.Backoff != 10*time.Millisecond || len(r.On) != 2 || r.On[0] != scenario.Retry5xx || r.On[1] != scenario.RetryFail || retry.Expect != outcome.Any {
		t.Errorf("retry: %+v %+v", retry, retry.Retry)
	}
	if !nokey.WithoutKey || nokey.Expect != outcome.Fail {
		t.Errorf("without_key: %+v", nokey)
	}
	if plain.ID != "step5" || plain.Index != 4 || plain.Fanout != 1 || plain.Sync != dispatch.SyncLastByte || plain.Expect != outcome.OK || plain.Retry != nil || plain.Args != nil || plain.Key != nil || plain.SyncPos.Line != 0 {
		t.Errorf("defaults: %+v", plain)
	}
}

// TestRetryDefaults: retry: {} is the agent framework's usual loop.
func TestRetryDefaults(t *testing.T) {
	s, errs := scenarioOf(t, withSteps("  - {call_tool: t, retry: {}}\n"))
	if len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	r := s.Steps[0].Retry
	if r == nil || r.Attempts != 3 || r.Backoff != 100*time.Millisecond || len(r.On) != 2 || r.On[0] != scenario.RetryInfo || r.On[1] != scenario.RetryConflict {
		t.Errorf("retry defaults %+v", r)
	}
}

// TestExpectDefaults: the outcome a call step must have when it says none, and what expect and
// expect_error make of it (DESIGN §3).
func TestExpectDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, step string
		want       outcome.Outcome
	}{
		{"a plain call", "{call_tool: t}", outcome.OK},
		{"lose_response", "{call_tool: t, lose_response: true}", outcome.Info},
		{"lose_response false", "{call_tool: t, lose_response: false}", outcome.OK},
		{"without_key", "{call_tool: t, without_key: true}", outcome.Fail},
		{"a fan-out", "{call_tool: t, fanout: 2}", outcome.Any},
		{"fanout 1 is a plain call", "{call_tool: t, fanout: 1}", outcome.OK},
		{"timeout", "{call_tool: t, timeout: 1s}", outcome.Any},
		{"retry", "{call_tool: t, retry: {attempts: 2}}", outcome.Any},
		{"timeout wins over lose_response", "{call_tool: t, timeout: 1s, lose_response: true}", outcome.Any},
		{"expect overrides", "{call_tool: t, lose_response: true, expect: fail}", outcome.Fail},
		{"expect any", "{call_tool: t, expect: any}", outcome.Any},
		{"expect_error", "{call_tool: t, expect_error: true}", outcome.Fail},
		{"expect_error false", "{call_tool: t, expect_error: false, lose_response: true}", outcome.Info},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, errs := scenarioOf(t, withSteps("  - "+tc.step+"\n"))
			if len(errs) > 0 {
				t.Fatal(strings.Join(errs, "\n"))
			}
			if got := s.Steps[0].Expect; got != tc.want {
				t.Errorf("expect = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCallStepErrors: each bad call step field is reported at its value, with a suggestion for a
// near miss.
func TestCallStepErrors(t *testing.T) {
	checkBad(t, []badCase{
		{name: "unknown field", src: withSteps("  - call_tool: t\n    fanuot: 2\n"),
			want: []string{`4:5: unknown field "fanuot" in call step (did you mean "fanout"?)`}},
		{name: "field given twice", src: withSteps("  - call_tool: t\n    fanout: 2\n    fanout: 3\n"),
			want: []string{`5:5: call step: "fanout" is given twice`}},
		{name: "call_tool empty", src: withSteps("  - call_tool:\n"),
			want: []string{"3:15: call_tool must be a string, got nothing"}},
		{name: "call_tool a list", src: withSteps("  - call_tool: [a, b]\n"),
			want: []string{"3:16: call_tool must be a string, got a list"}},
		{name: "args a list", src: withSteps("  - {call_tool: t, args: [1]}\n"),
			want: []string{"3:26: args must be a mapping, got a list"}},
		{name: "args a string", src: withSteps("  - {call_tool: t, args: a=1}\n"),
			want: []string{`3:26: args must be a mapping, got "a=1"`}},
		{name: "argument given twice", src: withSteps("  - {call_tool: t, args: {a: 1, a: 2}}\n"),
			want: []string{`3:33: args: "a" is given twice`}},
		{name: "argument template with an unknown name", src: withSteps("  - {call_tool: t, args: {a: \"{{ sesion }}\"}}\n"),
			want: []string{`3:34: template: unknown name sesion (did you mean "session"?)`}},
		{name: "key not a string", src: withSteps("  - {call_tool: t, key: [k]}\n"),
			want: []string{"3:25: key must be a string, got a list"}},
		{name: "key template with an unknown name", src: withSteps("  - {call_tool: t, key: \"k-{{ tral }}\"}\n"),
			want: []string{`3:31: key: unknown name tral (did you mean "trial"?)`}},
		{name: "retry_of not a string", src: withSteps("  - {retry_of: {a: b}}\n"),
			want: []string{"3:16: retry_of must be a string, got a mapping"}},
		{name: "fanout zero", src: withSteps("  - {call_tool: t, fanout: 0}\n"),
			want: []string{"3:28: fanout is 0, out of range"}},
		{name: "fanout negative", src: withSteps("  - {call_tool: t, fanout: -3}\n"),
			want: []string{"3:28: fanout is -3, out of range"}},
		{name: "fanout above the maximum", src: withSteps("  - {call_tool: t, fanout: 1001}\n"),
			want: []string{"3:28: fanout is 1001, out of range"}},
		{name: "fanout a fraction", src: withSteps("  - {call_tool: t, fanout: 2.5}\n"),
			want: []string{`3:28: fanout must be a whole number, got "2.5"`}},
		{name: "sync unknown", src: withSteps("  - {call_tool: t, fanout: 2, sync: barier}\n"),
			want: []string{`3:37: unknown sync "barier" (did you mean "barrier"?)`}},
		{name: "sync without a fan-out", src: withSteps("  - {call_tool: t, sync: barrier}\n"),
			want: []string{"3:26: sync only applies to a fan-out"}},
		{name: "stagger without a fan-out", src: withSteps("  - {call_tool: t, stagger: 1ms}\n"),
			want: []string{"3:29: stagger only applies to a fan-out"}},
		{name: "stagger not a duration", src: withSteps("  - {call_tool: t, fanout: 2, stagger: 5x}\n"),
			want: []string{`3:40: stagger "5x" is not a duration or a range of durations`}},
		{name: "stagger range reversed", src: withSteps("  - {call_tool: t, fanout: 2, stagger: 3ms..1ms}\n"),
			want: []string{`3:40: stagger "3ms..1ms" is not a duration or a range of durations`}},
		{name: "stagger negative", src: withSteps("  - {call_tool: t, fanout: 2, stagger: -1ms..1ms}\n"),
			want: []string{`3:40: stagger "-1ms..1ms" is not a duration or a range of durations`}},
		{name: "stagger too wide", src: withSteps("  - {call_tool: t, fanout: 2, stagger: 2s}\n"),
			want: []string{`3:40: stagger "2s" is too wide`}},
		{name: "timeout zero", src: withSteps("  - {call_tool: t, timeout: 0s}\n"),
			want: []string{"3:29: timeout must be above zero"}},
		{name: "timeout negative", src: withSteps("  - {call_tool: t, timeout: -1s}\n"),
			want: []string{"3:29: timeout must not be negative, got -1s"}},
		{name: "timeout without a unit", src: withSteps("  - {call_tool: t, timeout: 5}\n"),
			want: []string{`3:29: timeout must be a duration, got "5"`}},
		{name: "lose_response not a boolean", src: withSteps("  - {call_tool: t, lose_response: yes}\n"),
			want: []string{`3:35: lose_response must be true or false, got "yes"`}},
		{name: "lose_response with fanout", src: withSteps("  - {call_tool: t, fanout: 2, lose_response: true}\n"),
			want: []string{"3:46: lose_response cannot be combined with fanout"}},
		{name: "retry not a mapping", src: withSteps("  - {call_tool: t, retry: 3}\n"),
			want: []string{`3:27: retry must be a mapping (key: value lines), got "3"`}},
		{name: "retry unknown field", src: withSteps("  - {call_tool: t, retry: {attempt: 2}}\n"),
			want: []string{`3:28: unknown field "attempt" in retry (did you mean "attempts"?)`}},
		{name: "retry attempts zero", src: withSteps("  - {call_tool: t, retry: {attempts: 0}}\n"),
			want: []string{"3:38: retry.attempts is 0, out of range"}},
		{name: "retry attempts above the maximum", src: withSteps("  - {call_tool: t, retry: {attempts: 101}}\n"),
			want: []string{"3:38: retry.attempts is 101, out of range"}},
		{name: "retry on an unknown condition", src: withSteps("  - {call_tool: t, retry: {on: [info, timeout]}}\n"),
			want: []string{`3:39: unknown retry condition "timeout"`}},
		{name: "retry on one unknown condition, not in a list",
			src:  withSteps("  - {call_tool: t, retry: {on: timeout}}\n"),
			want: []string{`3:32: unknown retry condition "timeout"`}},
		{name: "retry backoff not a duration", src: withSteps("  - {call_tool: t, retry: {backoff: soon}}\n"),
			want: []string{`3:37: retry.backoff must be a duration, got "soon"`}},
		{name: "retry with fanout", src: withSteps("  - {call_tool: t, fanout: 2, retry: {attempts: 2}}\n"),
			want: []string{"3:38: retry cannot be combined with fanout"}},
		{name: "expect unknown", src: withSteps("  - {call_tool: t, expect: sucess}\n"),
			want: []string{`3:28: unknown outcome "sucess"`}},
		{name: "expect_error with expect", src: withSteps("  - {call_tool: t, expect: ok, expect_error: true}\n"),
			want: []string{"3:46: expect_error and expect are both given"}},
		{name: "expect_error not a boolean", src: withSteps("  - {call_tool: t, expect_error: 1}\n"),
			want: []string{`3:34: expect_error must be true or false, got "1"`}},
		{name: "without_key with key", src: withSteps("  - {call_tool: t, key: k, without_key: true}\n"),
			want: []string{"3:41: without_key and key are both given"}},
		{name: "without_key not a boolean", src: withSteps("  - {call_tool: t, without_key: on}\n"),
			want: []string{`3:33: without_key must be true or false, got "on"`}},
		{name: "verdict unknown", src: withSteps("  - {call_tool: t, verdict: of}\n"),
			want: []string{`3:29: unknown verdict "of" (did you mean "on"?)`}},
		{name: "every error of a step", src: withSteps("  - call_tool: t\n    fanout: 0\n    timeout: 0s\n    expect: maybe\n"),
			want: []string{"4:13: fanout is 0, out of range", "5:14: timeout must be above zero", `6:13: unknown outcome "maybe"`}},
	}, scenarioErrors)
}

// TestStepKindErrors: a step is one of a call, an assertion or a sleep, and its id a name.
func TestStepKindErrors(t *testing.T) {
	checkBad(t, []badCase{
		{name: "not a mapping", src: withSteps("  - call_tool\n"),
			want: []string{`3:5: step 1 must be a mapping, got "call_tool"`}},
		{name: "no kind", src: withSteps("  - sleep: 1ms\n  - id: x\n    args: {}\n"),
			want: []string{"4:5: step 2 is neither a call, an assertion nor a sleep"}},
		{name: "two kinds",
			src:  withSteps("  - call_tool: t\n    assert: \"true\"\n"),
			want: []string{"3:5: step 1 is more than one of a call, an assertion and a sleep"}},
		{name: "id not a name", src: withSteps("  - {id: 1st, call_tool: t}\n"),
			want: []string{`3:10: invalid step id "1st"`}},
		{name: "id a built-in", src: withSteps("  - {id: session, call_tool: t}\n"),
			want: []string{`3:10: step id "session" is a built-in name`}},
		{name: "id a keyword", src: withSteps("  - {id: in, call_tool: t}\n"),
			want: []string{`3:10: step id "in" is an expression keyword: assertions could not name it`}},
		{name: "id of a sink", src: `name: s
sinks:
  payments: {routes: {charge: {path: /charge}}}
steps:
  - {id: payments, call_tool: t}
`, want: []string{`5:10: step id "payments" is already the name of a sink or probe`}},
		{name: "id not a string", src: withSteps("  - {id: [a], sleep: 1ms}\n"),
			want: []string{"3:10: id must be a string, got a list", `3:10: invalid step id ""`}},
	}, scenarioErrors)
}

// TestAssertStep decodes an assertion over earlier steps, a sink and a probe.
func TestAssertStep(t *testing.T) {
	s, errs := scenarioOf(t, `name: s
sinks:
  payments: {routes: {charge: {path: /charge}}}
probes:
  ledger: {http: {url: "http://127.0.0.1:1/ledger"}}
steps:
  - {id: first, call_tool: t}
  - {id: burst, call_tool: t, fanout: 2}
  - id: settled
    assert: first.ok && burst.ok == 2 && len(payments.charge) == 1 && ledger.n == 1
    eventually: 2s
  - assert: settled == nil
`)
	if len(errs) > 0 {
		// An assert step is not a name later steps may use.
		if strings.Join(errs, "\n") != "12:13: assert: unknown name settled" {
			t.Fatal(strings.Join(errs, "\n"))
		}
	} else {
		t.Error("a later assertion named an assert step")
	}
	a := s.Steps[2]
	if a.Kind != scenario.AssertStep || a.ID != "settled" || a.Eventually != 2*time.Second || a.Assert == nil || !strings.HasPrefix(a.Assert.Source, "first.ok") {
		t.Fatalf("assert step %+v", a)
	}
	if a.Pos.Line != 10 || a.Pos.Col != 13 {
		t.Errorf("assert step at %v, want its expression's position 10:13", a.Pos)
	}
	for _, name := range []string{"first", "burst", "payments", "ledger"} {
		if !a.Assert.Uses(name) {
			t.Errorf("the assertion does not use %s", name)
		}
	}
}

// TestAssertStepErrors: an assertion is compiled when it loads, against what it may name there.
func TestAssertStepErrors(t *testing.T) {
	checkBad(t, []badCase{
		{name: "not a string", src: withSteps("  - assert: 42\n"),
			want: []string{`3:13: assert must be an expression string, got int "42"`}},
		{name: "unknown name", src: withSteps("  - {id: first, call_tool: t}\n  - assert: frist.ok\n"),
			want: []string{`4:13: assert: unknown name frist (did you mean "first"?)`}},
		{name: "unknown field of a call result", src: withSteps("  - {id: first, call_tool: t}\n  - assert: first.ok && first.statsu == 200\n"),
			want: []string{`4:31: assert: a call result has no field "statsu" (did you mean "status"?)`}},
		{name: "a later step", src: withSteps("  - assert: later.ok\n  - {id: later, call_tool: t}\n"),
			want: []string{"3:13: assert: unknown name later"}},
		{name: "syntax", src: withSteps("  - assert: \"first.ok &&\"\n"),
			want: []string{"3:24: assert: unexpected token EOF"}},
		{name: "eventually not a duration", src: withSteps("  - {assert: \"true\", eventually: soon}\n"),
			want: []string{`3:34: eventually must be a duration, got "soon"`}},
		{name: "eventually negative", src: withSteps("  - {assert: \"true\", eventually: -2s}\n"),
			want: []string{"3:34: eventually must not be negative, got -2s"}},
		{name: "unknown field", src: withSteps("  - {assert: \"true\", eventualy: 2s}\n"),
			want: []string{`3:22: unknown field "eventualy" in assert step (did you mean "eventually"?)`}},
		{name: "a sink's unknown route", src: `name: s
sinks:
  payments: {routes: {charges: {path: /charge}}}
steps:
  - assert: len(payments.charge) == 1
`, want: []string{`5:26: sink payments has no route "charge" (did you mean "charges"?)`}},
	}, scenarioErrors)
}

// TestSleepStep decodes a sleep, in both forms.
func TestSleepStep(t *testing.T) {
	s, errs := scenarioOf(t, withSteps("  - {id: pause, sleep: 1m30s}\n  - {action: sleep, duration: 5ms}\n"))
	if len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	if a := s.Steps[0]; a.Kind != scenario.SleepStep || a.ID != "pause" || a.Sleep != 90*time.Second {
		t.Errorf("sleep %+v", a)
	}
	if b := s.Steps[1]; b.Kind != scenario.SleepStep || b.ID != "step2" || b.Sleep != 5*time.Millisecond {
		t.Errorf("seed sleep %+v", b)
	}
}

// TestSleepStepErrors: a sleep is a non-negative duration and nothing else.
func TestSleepStepErrors(t *testing.T) {
	checkBad(t, []badCase{
		{name: "negative", src: withSteps("  - sleep: -5ms\n"),
			want: []string{"3:12: sleep must not be negative, got -5ms"}},
		{name: "no unit", src: withSteps("  - sleep: 5\n"),
			want: []string{`3:12: sleep must be a duration, got "5"`}},
		{name: "empty", src: withSteps("  - sleep:\n"),
			want: []string{"3:11: sleep must be a duration, got nothing"}},
		{name: "unknown field", src: withSteps("  - {sleep: 1ms, eventually: 1s}\n"),
			want: []string{`3:18: unknown field "eventually" in sleep step`}},
		{name: "near miss", src: withSteps("  - {sleep: 1ms, idd: x}\n"),
			want: []string{`3:18: unknown field "idd" in sleep step (did you mean "id"?)`}},
	}, scenarioErrors)
}

// TestSeedStepErrors: the hosted-runner form is renamed to the native one, and its errors stay at
// the positions written.
func TestSeedStepErrors(t *testing.T) {
	checkBad(t, []badCase{
		{name: "unknown action", src: withSteps("  - {action: asert, check: \"true\"}\n"),
			want: []string{`3:14: unknown action "asert" (did you mean "assert"?)`}},
		{name: "call_tool without tool", src: withSteps("  - {action: call_tool, args: {a: 1}}\n"),
			want: []string{"3:5: action: call_tool needs tool:"}},
		{name: "assert without check", src: withSteps("  - {action: assert, eventually: 1s}\n"),
			want: []string{"3:5: action: assert needs check:"}},
		{name: "assert alone",
			src:  withSteps("  - {action: assert}\n"),
			want: []string{"3:5: action: assert needs check:"}},
		{name: "sleep without duration",
			src:  withSteps("  - {action: sleep}\n"),
			want: []string{"3:5: action: sleep needs duration:"}},
		{name: "unknown field after renaming", src: withSteps("  - {action: call_tool, tool: t, argz: {}}\n"),
			want: []string{`3:34: unknown field "argz" in call step (did you mean "args"?)`}},
		{name: "check not a string", src: withSteps("  - {action: assert, check: 7}\n"),
			want: []string{`3:29: assert must be an expression string, got int "7"`}},
		{name: "tool and call_tool", src: withSteps("  - {action: call_tool, tool: a, call_tool: b}\n"),
			want: []string{`3:34: call step: "call_tool" is given twice`}},
	}, scenarioErrors)
}
