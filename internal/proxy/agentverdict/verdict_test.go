package agentverdict

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/trace"
)

// call builds a trace line of a mutating issue_refund with the key in its arguments.
func call(seq int, key string, amount float64, fault string, oc outcome.Outcome) trace.Call {
	result := json.RawMessage(`{"refundId":"re_1"}`)
	if oc != outcome.OK && fault == "" {
		result = nil
	}
	args := map[string]any{"accountId": "acct_1", "amount": amount}
	if key != "" {
		args["idempotencyKey"] = key
	}
	b, _ := json.Marshal(args)
	return trace.Call{Seq: seq, Tool: "issue_refund", Args: b, Key: key, KeyCarrier: "arg idempotencyKey",
		Mutating: true, Outcome: oc, Fault: fault, Result: result}
}

// rawCall builds a trace line of a mutating issue_refund with the arguments as the agent spelled
// them and the key added.
func rawCall(seq int, key, args string, fault string, oc outcome.Outcome) trace.Call {
	c := call(seq, key, 0, fault, oc)
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
	ok, info := outcome.OK, outcome.Info
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
			calls: []trace.Call{call(1, "s-1", 10, "error:503", outcome.Fail), call(2, "s-2", 10, "", ok)},
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
			v, _ := Judge(context.Background(), tc.calls, tc.opts)
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
			var text strings.Builder
			for _, f := range v.Findings {
				text.WriteString(f.Message + "\n")
			}
			for _, m := range tc.msgs {
				if !strings.Contains(text.String(), m) {
					t.Errorf("findings lack %q:\n%s", m, text.String())
				}
			}
		})
	}
}
