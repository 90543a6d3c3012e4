package proxy

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/trace"
)

// call builds a trace line of a mutating issue_refund with the key in its arguments.
func call(seq int, key string, amount float64, fault string, outcome endpoint.Outcome) trace.Call {
	result := json.RawMessage(`{"refundId":"re_1"}`)
	if outcome != endpoint.OK && fault == "" {
		result = nil
	}
	args := map[string]any{"accountId": "acct_1", "amount": amount}
	if key != "" {
		args["idempotencyKey"] = key
	}
	b, _ := json.Marshal(args)
	return trace.Call{Seq: seq, Tool: "issue_refund", Args: b, Key: key, KeyCarrier: "arg idempotencyKey",
		Mutating: true, Outcome: outcome, Fault: fault, Result: result}
}

// rawCall builds a trace line of a mutating issue_refund with the arguments as the agent spelled
// them and the key added.
func rawCall(seq int, key, args string, fault string, outcome endpoint.Outcome) trace.Call {
	c := call(seq, key, 0, fault, outcome)
	c.Args = json.RawMessage(strings.TrimSuffix(args, "}") + `,"idempotencyKey":"` + key + `"}`)
	return c
}

func TestNormNumber(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"10", "10"}, {"10.0", "10"}, {"1e1", "10"}, {"1E+1", "10"}, {"100e-1", "10"},
		{"12.50", "12.5"}, {"-0", "0"}, {"-0.0e5", "0"}, {"0.001", "0.001"}, {"-3.14", "-3.14"},
		{"1e30", "1e30"}, {"9007199254740993", "9007199254740993"}, {"1.5e-9", "15e-10"},
	} {
		if got := normNumber(tc.in); got != tc.want {
			t.Errorf("normNumber(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestJudge(t *testing.T) {
	ok, info := endpoint.OK, endpoint.Info
	for _, tc := range []struct {
		name  string
		calls []trace.Call
		opts  JudgeOptions
		// want lists the findings as "check violation" and the message fragments expected.
		want    []string
		msgs    []string
		failing bool
	}{
		{name: "clean session", calls: []trace.Call{call(1, "s-1", 10, "", ok), call(2, "s-2", 20, "", ok)}},
		{name: "same key after a lost response", calls: []trace.Call{call(1, "s-1", 10, "lose-response", info), call(2, "s-1", 10, "", ok)}},
		{
			name:  "new key after a lost response",
			calls: []trace.Call{call(1, "s-1", 10, "lose-response", info), call(2, "s-2", 10, "", ok)},
			want:  []string{"retry-same-key true"}, failing: true,
			msgs: []string{`would charge twice: issue_refund call #1 (response lost; the server executed it) was retried as call #2 with key "s-2" instead of "s-1"`},
		},
		{
			name: "argument order and spacing do not make another call",
			calls: []trace.Call{call(1, "s-1", 10, "timeout", info),
				{Seq: 2, Tool: "issue_refund", Args: json.RawMessage(`{ "idempotencyKey":"s-9", "amount":10, "accountId":"acct_1" }`), Key: "s-9", KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: ok}},
			want: []string{"retry-same-key true"}, failing: true, msgs: []string{"timed out"},
		},
		{
			name:  "new key after an injected error",
			calls: []trace.Call{call(1, "s-1", 10, "error:503", endpoint.Fail), call(2, "s-2", 10, "", ok)},
			want:  []string{"retry-same-key true"}, failing: true, msgs: []string{"answered error:503 by idemtest"},
		},
		{
			name:  "new key after a real indeterminate outcome",
			calls: []trace.Call{call(1, "s-1", 10, "", info), call(2, "s-2", 10, "", ok)},
			want:  []string{"retry-same-key true"}, failing: true,
		},
		{
			name: "ignored arguments do not make another call",
			calls: []trace.Call{
				{Seq: 1, Tool: "send_email", Args: json.RawMessage(`{"to":"a","meta":{"sentAt":1},"idempotencyKey":"k"}`), Key: "k", KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: info, Fault: "lose-response"},
				{Seq: 2, Tool: "send_email", Args: json.RawMessage(`{"to":"a","meta":{"sentAt":2},"idempotencyKey":"k2"}`), Key: "k2", KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: ok},
			},
			opts: JudgeOptions{IgnoreArgs: []string{"meta.sentAt"}},
			want: []string{"retry-same-key true"}, failing: true,
		},
		{
			name: "a number respelled with a new key after a lost response",
			calls: []trace.Call{rawCall(1, "s-1", `{"accountId":"acct_1","amount":10}`, "lose-response", info),
				rawCall(2, "s-2", `{"accountId":"acct_1","amount":10.0}`, "", ok)},
			want: []string{"retry-same-key true"}, failing: true,
			msgs: []string{`was retried as call #2 with key "s-2" instead of "s-1"`},
		},
		{
			name: "a number respelled with the same key is the same call",
			calls: []trace.Call{rawCall(1, "s-1", `{"accountId":"acct_1","amount":10}`, "lose-response", info),
				rawCall(2, "s-1", `{"accountId":"acct_1","amount":1e1}`, "", ok)},
		},
		{
			name: "a default spelled out with a new key after a lost response",
			calls: []trace.Call{rawCall(1, "s-1", `{"accountId":"acct_1","amount":10}`, "lose-response", info),
				rawCall(2, "s-2", `{"accountId":"acct_1","amount":10.00,"currency":"USD"}`, "", ok)},
			want: []string{"retry-same-key true"}, failing: true,
			msgs: []string{`was retried as call #2 with key "s-2" instead of "s-1" (the retry's arguments differ only in: currency)`},
		},
		{
			name: "an optional argument dropped with a new key after a timeout",
			calls: []trace.Call{rawCall(1, "s-1", `{"accountId":"acct_1","amount":10,"currency":"USD","note":"x"}`, "timeout", info),
				rawCall(2, "s-2", `{"accountId":"acct_1","amount":10}`, "", ok)},
			want: []string{"retry-same-key true"}, failing: true,
			msgs: []string{"(the retry's arguments differ only in: currency, note)"},
		},
		{
			name: "another amount is a new call, not a retry",
			calls: []trace.Call{rawCall(1, "s-1", `{"accountId":"acct_1","amount":10}`, "lose-response", info),
				rawCall(2, "s-2", `{"accountId":"acct_1","amount":11,"currency":"USD"}`, "", ok)},
			want: []string{"retried false"}, msgs: []string{"was never retried"},
		},
		{
			name: "only the next call of the tool can be a regenerated retry",
			calls: []trace.Call{rawCall(1, "s-1", `{"accountId":"acct_1","amount":10}`, "lose-response", info),
				rawCall(2, "s-2", `{"accountId":"acct_2","amount":10}`, "", ok),
				rawCall(3, "s-3", `{"accountId":"acct_1","amount":10,"currency":"USD"}`, "", ok)},
			want: []string{"retried false"},
		},
		{
			name: "arguments added and others dropped make a new call",
			calls: []trace.Call{rawCall(1, "s-1", `{"accountId":"acct_1","amount":10,"note":"a"}`, "lose-response", info),
				rawCall(2, "s-2", `{"accountId":"acct_1","amount":10,"currency":"USD"}`, "", ok)},
			want: []string{"retried false"},
		},
		{name: "a delay is not a fault to retry", calls: []trace.Call{call(1, "s-1", 10, "delay:2s", ok), call(2, "s-2", 10, "", ok)}},
		{
			name:  "never retried is reported",
			calls: []trace.Call{call(1, "s-1", 10, "lose-response", info)},
			want:  []string{"retried false"}, msgs: []string{"outcome left unknown to the agent", "--require-retry makes it fail"},
		},
		{
			name:  "never retried fails with RequireRetry",
			calls: []trace.Call{call(1, "s-1", 10, "lose-response", info)}, opts: JudgeOptions{RequireRetry: true},
			want: []string{"retried true"}, failing: true,
		},
		{
			name:  "missing key",
			calls: []trace.Call{call(1, "", 10, "", ok)},
			want:  []string{"key-present true"}, failing: true, msgs: []string{"issue_refund call #1 is mutating and carries no key (arg idempotencyKey)"},
		},
		{
			name:  "read-only calls need no key",
			calls: []trace.Call{{Seq: 1, Tool: "list_refunds", Outcome: ok, Fault: "lose-response", KeyCarrier: "arg idempotencyKey"}},
		},
		{
			name:  "one key for two calls",
			calls: []trace.Call{call(1, "s-1", 10, "", ok), call(2, "s-1", 99, "", ok)},
			want:  []string{"one-key-one-call true"}, failing: true, msgs: []string{`key "s-1" covers two different calls: issue_refund #1 {"accountId":"acct_1","amount":10}`},
		},
		{
			name:  "key pattern",
			calls: []trace.Call{call(1, "s-1", 10, "", ok), call(2, "7f3a", 20, "", ok)}, opts: JudgeOptions{KeyPattern: regexp.MustCompile(`^s-\d+$`)},
			want: []string{"key-pattern true"}, failing: true, msgs: []string{`issue_refund call #2: key "7f3a" does not match --key-pattern`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.calls, tc.opts)
			var got []string
			for _, f := range v.Findings {
				got = append(got, string(f.Check)+" "+map[bool]string{true: "true", false: "false"}[f.Violation])
			}
			if strings.Join(got, ";") != strings.Join(tc.want, ";") {
				t.Errorf("findings = %q, want %q\n%+v", got, tc.want, v.Findings)
			}
			if v.Failed() != tc.failing {
				t.Errorf("failed = %v, want %v", v.Failed(), tc.failing)
			}
			var text bytes.Buffer
			if err := WriteText(&text, v); err != nil {
				t.Fatal(err)
			}
			for _, m := range tc.msgs {
				if !strings.Contains(text.String(), m) {
					t.Errorf("report lacks %q:\n%s", m, text.String())
				}
			}
		})
	}
}

func TestReportsAreValid(t *testing.T) {
	v := Judge([]trace.Call{call(1, "s-\x01", 10, "lose-response", endpoint.Info), call(2, "s-2", 10, "", endpoint.OK)}, JudgeOptions{})
	var junit bytes.Buffer
	if err := WriteJUnit(&junit, v); err != nil {
		t.Fatal(err)
	}
	var suites junitSuites
	if err := xml.Unmarshal(junit.Bytes(), &suites); err != nil {
		t.Fatalf("junit is not valid XML: %v\n%s", err, junit.String())
	}
	s := suites.Suites[0]
	if s.Tests != 4 || s.Failures != 1 {
		t.Errorf("junit tests=%d failures=%d, want 4 and 1", s.Tests, s.Failures)
	}
	validJUnit(t, junit.Bytes())
	var js bytes.Buffer
	if err := WriteJSON(&js, v); err != nil {
		t.Fatal(err)
	}
	var back Verdict
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Violations != 1 || back.Findings[0].Check != CheckRetrySameKey {
		t.Errorf("json = %s (%v)", js.String(), err)
	}
}

func TestParseFault(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Fault
		err  string
	}{
		{in: "lose-response:issue_refund#1", want: Fault{Kind: LoseResponse, Tool: "issue_refund", N: 1}},
		{in: "timeout:send_email#3", want: Fault{Kind: Timeout, Tool: "send_email", N: 3}},
		{in: "error:503:issue_refund#2", want: Fault{Kind: Error, Status: 503, Tool: "issue_refund", N: 2}},
		{in: "error:issue_refund#2", want: Fault{Kind: Error, Status: 503, Tool: "issue_refund", N: 2}},
		{in: "delay:2s:issue_refund#1", want: Fault{Kind: Delay, Delay: 2 * time.Second, Tool: "issue_refund", N: 1}},
		{in: "lose-response:issue_refund", err: "no TOOL#N"},
		{in: "lose-response:issue_refund#0", err: "N must be a call number"},
		{in: "explode:issue_refund#1", err: `unknown kind "explode"`},
		{in: "error:200:issue_refund#1", err: "400-599"},
		{in: "delay:soon:issue_refund#1", err: "positive duration"},
		{in: "issue_refund#1", err: "no tool"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseFault(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestFaultRateIsReproducible(t *testing.T) {
	draw := func(seed uint64) string {
		r := NewRecorder(Options{FaultRate: 0.5, Seed: seed, Mutating: []string{"issue_refund"}})
		var b strings.Builder
		for range 40 {
			p := r.Begin("issue_refund", nil, "k")
			b.WriteString(map[bool]string{true: "x", false: "."}[p.Fault.Kind == LoseResponse])
			if q := r.Begin("list_refunds", nil, ""); q.Fault.Kind != "" {
				t.Fatalf("a read-only call got fault %s", q.Fault)
			}
		}
		return b.String()
	}
	a, b := draw(7), draw(7)
	if a != b {
		t.Errorf("seed 7 drew %s then %s", a, b)
	}
	if !strings.Contains(a, "x") || !strings.Contains(a, ".") {
		t.Errorf("rate 0.5 over 40 calls drew %s", a)
	}
	if draw(8) == a {
		t.Errorf("seeds 7 and 8 drew the same faults %s", a)
	}
}

// validJUnit checks a report against the JUnit schema of Jenkins' xUnit plugin (vendored with
// the reporters).
func validJUnit(t *testing.T, junit []byte) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("xmllint is not installed (CI=true requires it)")
		}
		return
	}
	path := filepath.Join(t.TempDir(), "proxy.xml")
	if err := os.WriteFile(path, junit, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("..", "reporters", "junit", "testdata", "junit-10.xsd"), path).CombinedOutput(); err != nil {
		t.Errorf("the JUnit report is not valid against the xUnit schema: %v\n%s\n%s", err, out, junit)
	}
}

// TestReportsOfNothingJudged: a session without a mutating call skips every check, a failed
// tool server is one more test case in error, in reports that stay valid; a pass without a
// fault says that no retry was tested.
func TestReportsOfNothingJudged(t *testing.T) {
	readOnly := trace.Call{Seq: 1, Tool: "list_refunds", Outcome: endpoint.OK}
	failed := Judge(nil, JudgeOptions{})
	failed.Error = "tool server \"sh\" never answered the agent's initialize request; the end of its stderr:\n  boom"
	for _, tc := range []struct {
		name                   string
		v                      Verdict
		tests, errors, skipped int
		result, last           string
	}{
		{"no call", Judge(nil, JudgeOptions{}), 4, 0, 4, "nothing-judged", "nothing judged: the agent made no tool call\n"},
		{"read-only calls", Judge([]trace.Call{readOnly}, JudgeOptions{}), 4, 0, 4, "nothing-judged", "nothing judged: the agent made no mutating tool call (1 read-only)\n"},
		{"no fault injected", Judge([]trace.Call{call(1, "s-1", 10, "", endpoint.OK)}, JudgeOptions{}), 4, 0, 0, "pass", "PASS: the agent kept its keys (no fault was injected: no retry was tested)\n"},
		{"a failed tool server", failed, 5, 1, 4, "error", "ERROR: tool server \"sh\" never answered the agent's initialize request; the end of its stderr:\n  boom\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var junit, js, text bytes.Buffer
			if err := errors.Join(WriteJUnit(&junit, tc.v), WriteJSON(&js, tc.v), WriteText(&text, tc.v)); err != nil {
				t.Fatal(err)
			}
			var suites junitSuites
			if err := xml.Unmarshal(junit.Bytes(), &suites); err != nil {
				t.Fatalf("junit is not valid XML: %v\n%s", err, junit.String())
			}
			if s := suites.Suites[0]; s.Tests != tc.tests || s.Errors != tc.errors || s.Skipped != tc.skipped || s.Failures != 0 {
				t.Errorf("junit tests=%d errors=%d skipped=%d failures=%d, want %d %d %d 0", s.Tests, s.Errors, s.Skipped, s.Failures, tc.tests, tc.errors, tc.skipped)
			}
			validJUnit(t, junit.Bytes())
			if !strings.Contains(js.String(), `"result": "`+tc.result+`"`) {
				t.Errorf("json lacks result %q:\n%s", tc.result, js.String())
			}
			if !strings.HasSuffix(text.String(), tc.last) || tc.result != "pass" && strings.Contains(text.String(), "PASS") {
				t.Errorf("text does not end with %q:\n%s", tc.last, text.String())
			}
		})
	}
}
