package verdict

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func refund(id string, extra ...any) map[string]any {
	m := map[string]any{"refundId": id, "amount": 49.99}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

func TestJudge(t *testing.T) {
	ok := func(step string, answer any) Call {
		return Call{Key: "s1-0", Tool: "issue_refund", Step: step, Attempt: 1, OK: true, Answer: answer}
	}
	marked := func(c Call) Call { c.Replayed = true; return c }
	lost := func(c Call) Call { c.Lost = true; return c }
	failed := func(step string) Call {
		return Call{Key: "s1-0", Tool: "issue_refund", Step: step, Attempt: 1, Answer: map[string]any{"title": "conflict"}}
	}
	ignore := func(c Call, paths ...string) Call { c.Ignore = paths; return c }
	exempt := func(c Call) Call { c.Exempt = true; return c }
	withKey := func(c Call, key, tool string) Call { c.Key, c.Tool = key, tool; return c }
	args := func(c Call, amount float64, kv ...string) Call {
		c.Args = map[string]any{"accountId": "acct_1", "amount": amount}
		for i := 0; i+1 < len(kv); i += 2 {
			c.Args[kv[i]] = kv[i+1]
		}
		return c
	}
	echoed := func(amount float64) map[string]any {
		return map[string]any{"accountId": "acct_1", "amount": amount, "status": "succeeded"}
	}

	tests := []struct {
		name       string
		calls      []Call
		kinds      []Kind
		executions int // of the first violation
		replays    int
		duplicates int
		unprovable int // keys
	}{
		{name: "one execution, a marked replay", calls: []Call{ok("first", refund("re_1")), marked(ok("retry", refund("re_1")))}, replays: 1},
		{name: "an unmarked byte-for-byte replay", calls: []Call{ok("first", refund("re_1")), ok("retry", refund("re_1"))}, replays: 1},
		{name: "a lost answer and its retry executed twice", calls: []Call{lost(ok("first", refund("re_1"))), ok("retry", refund("re_2"))},
			kinds: []Kind{DoubleExecution}, executions: 2, duplicates: 1},
		{name: "a lost answer replayed", calls: []Call{lost(ok("first", refund("re_1"))), marked(ok("retry", refund("re_1")))}, replays: 1},
		{name: "a burst with 3 executions and a replay of one",
			calls: []Call{ok("burst", refund("re_1")), ok("burst", refund("re_2")), ok("burst", refund("re_2")), ok("burst", refund("re_3"))},
			kinds: []Kind{DoubleExecution}, executions: 3, replays: 1, duplicates: 2},
		{name: "a marked replay with a new id", calls: []Call{ok("first", refund("re_1")), marked(ok("retry", refund("re_2")))},
			kinds: []Kind{ReplayDiffers}, executions: 1, replays: 1},
		{name: "three marked replays with new ids are one violation of the key",
			calls: []Call{ok("first", refund("re_1")), marked(ok("b", refund("re_2"))), marked(ok("c", refund("re_3"))), marked(ok("d", refund("re_1")))},
			kinds: []Kind{ReplayDiffers}, executions: 1, replays: 3},
		{name: "replays of either of two executions are explained by the double execution",
			calls: []Call{ok("burst", refund("re_1")), marked(ok("burst", refund("re_2"))), ok("burst", refund("re_2"))},
			kinds: []Kind{DoubleExecution}, executions: 2, replays: 1, duplicates: 1},
		{name: "a replay of neither execution differs too, after the double execution",
			calls: []Call{ok("burst", refund("re_1")), marked(ok("burst", refund("re_3"))), ok("burst", refund("re_2"))},
			kinds: []Kind{DoubleExecution, ReplayDiffers}, executions: 2, replays: 1, duplicates: 1},
		{name: "marked replays of a first answer idemtest never saw",
			calls: []Call{marked(ok("retry", refund("re_1"))), marked(ok("again", refund("re_1")))}, replays: 2},
		{name: "a marked replay listed before the execution (fan-out copies)", calls: []Call{marked(ok("burst", refund("re_1"))), ok("burst", refund("re_1"))}, replays: 1},
		{name: "fail answers are not executions", calls: []Call{ok("first", refund("re_1")), failed("retry"), failed("again")}},
		{name: "info answers are neither", calls: []Call{{Key: "s1-0", Tool: "issue_refund", Step: "first"}, ok("retry", refund("re_1"))}},
		{name: "an ignored request id", calls: []Call{ignore(ok("first", refund("re_1", "requestId", "r1")), "requestId"), ignore(ok("retry", refund("re_1", "requestId", "r2")), "requestId")}, replays: 1},
		{name: "a request id not ignored", calls: []Call{ok("first", refund("re_1", "requestId", "r1")), ok("retry", refund("re_1", "requestId", "r2"))},
			kinds: []Kind{DoubleExecution}, executions: 2, duplicates: 1},
		{name: "a nested ignored timestamp in a list",
			calls: []Call{ignore(ok("first", map[string]any{"items": []any{map[string]any{"id": "a", "meta": map[string]any{"at": 1.0}}}}), "items.meta.at"),
				ignore(ok("retry", map[string]any{"items": []any{map[string]any{"id": "a", "meta": map[string]any{"at": 2.0}}}}), "items.meta.at")},
			replays: 1},
		{name: "a tool idempotent by nature is not judged", calls: []Call{exempt(ok("a", map[string]any{"changed": true})), exempt(ok("b", map[string]any{"changed": false}))}},
		{name: "an exempt marked replay still counts as a replay", calls: []Call{exempt(ok("a", 1.0)), exempt(marked(ok("b", 1.0)))}, replays: 1},
		{name: "one key on two tools is two scopes", calls: []Call{ok("a", refund("re_1")), withKey(ok("b", refund("re_2")), "s1-0", "other")}},
		{name: "calls without a key are not judged", calls: []Call{withKey(ok("a", refund("re_1")), "", "issue_refund"), withKey(ok("b", refund("re_2")), "", "issue_refund")}},
		{name: "answers that are not JSON", calls: []Call{ok("a", "done 1"), ok("b", "done 2")}, kinds: []Kind{DoubleExecution}, executions: 2, duplicates: 1},
		{name: "empty answers are equal but prove nothing", calls: []Call{ok("a", nil), ok("b", nil)}, unprovable: 1},
		{name: "equal answers without an id prove nothing",
			calls: []Call{ok("first", map[string]any{"status": "succeeded"}), ok("retry", map[string]any{"status": "succeeded"})}, unprovable: 1},
		{name: "equal answers that echo the payload prove nothing, across keys too",
			calls: []Call{args(withKey(ok("once", echoed(5)), "s1-0", "issue_refund"), 5), args(withKey(ok("first", echoed(49.99)), "s1-1", "issue_refund"), 49.99),
				args(withKey(ok("retry", echoed(49.99)), "s1-1", "issue_refund"), 49.99)}, unprovable: 1},
		{name: "an id that is the same for every key proves nothing",
			calls:      []Call{withKey(ok("once", map[string]any{"id": "static"}), "s1-9", "issue_refund"), ok("first", map[string]any{"id": "static"}), ok("retry", map[string]any{"id": "static"})},
			unprovable: 1},
		{name: "a value that differs between keys is minted",
			calls:   []Call{withKey(ok("once", map[string]any{"balance": 10.0}), "s1-9", "issue_refund"), ok("first", map[string]any{"balance": 20.0}), ok("retry", map[string]any{"balance": 20.0})},
			replays: 1},
		{name: "an id in the answer, the payload echoed",
			calls: []Call{args(ok("first", refund("re_1", "accountId", "acct_1")), 49.99), args(ok("retry", refund("re_1", "accountId", "acct_1")), 49.99)}, replays: 1},
		{name: "an id the client sent is an echo",
			calls: []Call{args(ok("first", map[string]any{"orderId": "o_1"}), 0, "orderId", "o_1"), args(ok("retry", map[string]any{"orderId": "o_1"}), 0, "orderId", "o_1")}, unprovable: 1},
		{name: "a marked replay needs no id", calls: []Call{ok("first", nil), marked(ok("retry", nil))}, replays: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := Judge(tt.calls)
			var kinds []Kind
			for _, v := range j.Violations {
				kinds = append(kinds, v.Kind)
			}
			if !reflect.DeepEqual(kinds, tt.kinds) {
				t.Fatalf("violations %v, want %v", kinds, tt.kinds)
			}
			if len(j.Violations) > 0 && j.Violations[0].Executions != tt.executions {
				t.Errorf("executions %d, want %d", j.Violations[0].Executions, tt.executions)
			}
			if len(j.Unprovable) != tt.unprovable {
				t.Errorf("unprovable %+v, want %d keys", j.Unprovable, tt.unprovable)
			}
			if j.Replays != tt.replays || j.Duplicates != tt.duplicates {
				t.Errorf("replays %d duplicates %d, want %d and %d", j.Replays, j.Duplicates, tt.replays, tt.duplicates)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	j := Judge([]Call{
		{Key: "s1-3", Tool: "issue_refund", Step: "other", OK: true, Answer: 1.0},
		{Key: "k", Tool: "issue_refund", Step: "first", Attempt: 1, OK: true, Lost: true, Answer: refund("re_1")},
		{Key: "k", Tool: "issue_refund", Step: "retry", Attempt: 1, OK: true, Answer: refund("re_2")},
	})
	if len(j.Violations) != 1 {
		t.Fatalf("violations: %+v", j.Violations)
	}
	v := j.Violations[0]
	if v.First != 1 || v.Message() != "key k executed 2 times (issue_refund)" {
		t.Errorf("first %d, message %q", v.First, v.Message())
	}
	got := strings.Join(v.Explain(), "\n")
	for _, want := range []string{
		`  first (lost)  {"amount":49.99,"refundId":"re_1"}`,
		`  retry         {"amount":49.99,"refundId":"re_2"}`,
		"they differ at: refundId",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("explanation lacks %q:\n%s", want, got)
		}
	}
}

// TestHint: the likely cause follows how the key came to execute twice.
func TestHint(t *testing.T) {
	answer := func(n int) map[string]any { return map[string]any{"refundId": fmt.Sprint("re_", n)} }
	for _, tc := range []struct {
		name  string
		calls []Call
		want  string
	}{
		{"copies of one fan-out", []Call{
			{Key: "k", Step: "burst", Copy: 1, OK: true, Answer: answer(1)},
			{Key: "k", Step: "burst", Copy: 2, OK: true, Answer: answer(2)},
		}, "check-and-store is not atomic"},
		{"a retry after a lost answer", []Call{
			{Key: "k", Step: "first", OK: true, Lost: true, Answer: answer(1)},
			{Key: "k", Step: "retry", OK: true, Answer: answer(2)},
		}, "did not find the key when the call came again"},
		{"a replay with a new id", []Call{
			{Key: "k", Step: "first", OK: true, Answer: answer(1)},
			{Key: "k", Step: "retry", OK: true, Replayed: true, Answer: answer(2)},
		}, "builds the answer again on replay"},
		{"a retry on another instance", []Call{
			{Key: "k", Step: "first", OK: true, Answer: answer(1), Instance: 1},
			{Key: "k", Step: "retry", OK: true, Answer: answer(2), Instance: 2},
		}, "the instances do not share their keys"},
		{"copies of one fan-out on two instances", []Call{
			{Key: "k", Step: "burst", Copy: 1, OK: true, Answer: answer(1), Instance: 1},
			{Key: "k", Step: "burst", Copy: 2, OK: true, Answer: answer(2), Instance: 2},
		}, "do not share one atomic check-and-store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := Judge(tc.calls)
			if len(j.Violations) != 1 || !strings.Contains(j.Violations[0].Hint(), tc.want) {
				t.Fatalf("violations %+v; want one whose hint says %q", j.Violations, tc.want)
			}
		})
	}
}

// TestInstances: the verdict is per key across the instances of an endpoint, and a violation
// names the instances its executions ran on.
func TestInstances(t *testing.T) {
	answer := func(id string) map[string]any { return map[string]any{"refundId": id} }
	for _, tc := range []struct {
		name       string
		calls      []Call
		message    string // "" when the key is clean
		explainHas string
	}{
		{name: "a retry executed again on another instance", calls: []Call{
			{Key: "k", Tool: "issue_refund", Step: "first", Attempt: 1, OK: true, Answer: answer("re_1"), Instance: 1},
			{Key: "k", Tool: "issue_refund", Step: "retry", Attempt: 1, OK: true, Answer: answer("re_2"), Instance: 2},
		}, message: "key k executed 2 times (issue_refund): on instance 1 and instance 2", explainHas: "retry on instance 2"},
		{name: "a replay from another instance is one execution", calls: []Call{
			{Key: "k", Tool: "issue_refund", Step: "first", Attempt: 1, OK: true, Answer: answer("re_1"), Instance: 1},
			{Key: "k", Tool: "issue_refund", Step: "retry", Attempt: 1, OK: true, Replayed: true, Answer: answer("re_1"), Instance: 2},
		}},
		{name: "three executions on two instances", calls: []Call{
			{Key: "k", Tool: "t", Step: "burst", Copy: 1, OK: true, Answer: answer("a"), Instance: 2},
			{Key: "k", Tool: "t", Step: "burst", Copy: 2, OK: true, Answer: answer("b"), Instance: 1},
			{Key: "k", Tool: "t", Step: "burst", Copy: 3, OK: true, Answer: answer("c"), Instance: 2},
		}, message: "key k executed 3 times (t): on instance 2 and instance 1", explainHas: "burst copy 2 on instance 1"},
		{name: "twice on one instance", calls: []Call{
			{Key: "k", Tool: "t", Step: "first", OK: true, Answer: answer("a"), Instance: 1},
			{Key: "k", Tool: "t", Step: "again", OK: true, Answer: answer("b"), Instance: 1},
		}, message: "key k executed 2 times (t): each on instance 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := Judge(tc.calls)
			if tc.message == "" {
				if len(j.Violations) != 0 {
					t.Fatalf("violations %+v, want none", j.Violations)
				}
				return
			}
			if len(j.Violations) != 1 {
				t.Fatalf("violations %+v, want one", j.Violations)
			}
			v := j.Violations[0]
			if got := v.Message(); got != tc.message {
				t.Errorf("message %q, want %q", got, tc.message)
			}
			if ex := strings.Join(v.Explain(), "\n"); !strings.Contains(ex, tc.explainHas) {
				t.Errorf("explanation %s\nwant it to contain %q", ex, tc.explainHas)
			}
		})
	}
}
