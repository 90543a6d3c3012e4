package sweep

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/trace"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	if s == "" {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDelta(t *testing.T) {
	for _, tc := range []struct {
		name, before, after, want string
	}{
		{"unchanged", `{"a":[1,2]}`, `{"a":[1,2]}`, `null`},
		{"an item added, order ignored", `{"a":[{"id":1},{"id":2}]}`, `{"a":[{"id":2},{"id":3},{"id":1}]}`, `{"a":{"+":[{"id":3}]}}`},
		{"a repeated item counts", `{"a":["x"]}`, `{"a":["x","x"]}`, `{"a":{"+":["x"]}}`},
		{"an item removed", `{"a":["x","y"]}`, `{"a":["y"]}`, `{"a":{"-":["x"]}}`},
		{"a leaf changed", `{"n":1,"s":"a"}`, `{"n":2,"s":"a"}`, `{"n":{"=":2}}`},
		{"no baseline", ``, `{"content":"hi"}`, `{"=":{"content":"hi"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := jsonvalue.Canonical(jsonvalue.Diff(decode(t, tc.before), decode(t, tc.after)))
			if got != tc.want {
				t.Errorf("delta = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestMask(t *testing.T) {
	m := masker{session: "ab12cd", minted: map[string]bool{"re_new": true}}
	in := decode(t, `{"refunds":[{"id":"re_new","key":"ab12cd-3","at":"2026-12-03T07:00:00.123Z","acct":"acct_1"},{"id":"re_new","key":"ab12cd-1","at":"2026-12-03","acct":"acct_0"}]}`)
	got := jsonvalue.Canonical(m.mask(in))
	want := `{"refunds":[{"acct":"acct_0","at":"<time>","id":"<minted>","key":"<session>"},{"acct":"acct_1","at":"<time>","id":"<minted>","key":"<session>"}]}`
	if got != want {
		t.Errorf("mask = %s\nwant %s", got, want)
	}
}

func TestCompareRead(t *testing.T) {
	item := `{"acct":"a","id":"<minted>"}`
	obs := func(beforeOK bool, delta, value string) observed {
		return observed{ok: true, beforeOK: beforeOK, delta: decode(t, delta), value: decode(t, value)}
	}
	rd := read{label: "list_refunds (state after the run)", before: "s_before", after: "s_after"}
	for _, tc := range []struct {
		name      string
		base, got observed
		same      bool
		want      string
	}{
		{"the same change on a fuller list", obs(true, `{"r":{"+":[`+item+`]}}`, `{"r":[1]}`), obs(true, `{"r":{"+":[`+item+`]}}`, `{"r":[1,2,3]}`), true, ""},
		{"one item more", obs(true, `{"r":{"+":[`+item+`]}}`, `{}`), obs(true, `{"r":{"+":[`+item+`,`+item+`]}}`, `{}`), false,
			"list_refunds (state after the run): the change differs from run 0's at r.+ (1 → 2 items)\n  only here:     " + item},
		{"no baseline in one run: the answers", obs(false, `{"=":1}`, `{"c":"x"}`), obs(true, `null`, `{"c":"x"}`), true, ""},
		{"answers differ", obs(false, ``, `{"c":"hello big world"}`), obs(false, ``, `{"c":"hello big big world"}`), false,
			"list_refunds (state after the run): the answer differs from run 0's at c\n  run 0: {\"c\":\"hello big world\"}\n  here:  {\"c\":\"hello big big world\"}"},
		{"not answered here", obs(true, `null`, `{}`), observed{}, false, "list_refunds (state after the run): answered in run 0, not answered here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			same, lines := compareRead(rd, tc.base, tc.got)
			if same != tc.same || strings.Join(lines, "\n") != tc.want {
				t.Errorf("compareRead = %v\n%s\nwant %v\n%s", same, strings.Join(lines, "\n"), tc.same, tc.want)
			}
		})
	}
}

func TestPlanRules(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	p, err := newPlan(context.Background(), []trace.Call{
		// The agent chose acct_1; the answer echoes it: not carried.
		{Seq: 1, Tool: "issue_refund", Args: raw(`{"accountId":"acct_1","idempotencyKey":"k1"}`), Key: "k1", KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: "info", Result: raw(`{"refundId":"re_1","accountId":"acct_1"}`)},
		// The agent's retry with its key.
		{Seq: 2, Tool: "issue_refund", Args: raw(`{"accountId":"acct_1","idempotencyKey":"k1"}`), Key: "k1", KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: "ok", Result: raw(`{"refundId":"re_1","accountId":"acct_1"}`)},
		// The refund id came back in call 2's answer (call 1's was lost: the agent never saw it).
		{Seq: 3, Tool: "get_refund", Args: raw(`{"ids":["re_1"],"accountId":"acct_1"}`), Outcome: "ok", Result: raw(`{"items":[{"id":"re_1"}]}`)},
		// An answer lost with outcome fail is no source.
		{Seq: 4, Tool: "note", Args: raw(`{"text":"x"}`), Key: "k2", KeyCarrier: "header Idempotency-Key", Mutating: true, Outcome: "fail", Result: raw(`{"noteId":"n_1"}`)},
		{Seq: 5, Tool: "read_note", Args: raw(`{"id":"n_1"}`), Outcome: "ok"},
	}, "idempotencyKey")
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonvalue.Canonical(p.carries); got != `[{"from":2,"path":"refundId","to":3,"arg":"ids.0","value":"re_1"}]` {
		t.Errorf("carries = %s", got)
	}
	if p.calls[1].retryOf != "c1" || p.calls[0].retryOf != "" || p.calls[3].retryOf != "" {
		t.Errorf("retries: %q %q %q", p.calls[0].retryOf, p.calls[1].retryOf, p.calls[3].retryOf)
	}
	steps := run{fault: Clean}.steps(p)
	if steps[1].RetryOf != "c1" || steps[1].CallTool != "" {
		t.Errorf("the recorded retry is %+v", steps[1])
	}
	if got := jsonvalue.Canonical(steps[2].Args); got != `{"accountId":"acct_1","ids":["{{ c2.result.refundId }}"]}` {
		t.Errorf("call 3 args = %s", got)
	}
	if _, err := newPlan(context.Background(), nil, ""); err == nil {
		t.Error("an empty trace is accepted")
	}
	if _, err := newPlan(context.Background(), []trace.Call{{Seq: 1, Tool: "t", Args: raw(`[1]`)}}, ""); err == nil || !strings.Contains(err.Error(), "call seq 1 (t): args") {
		t.Errorf("arguments that are not an object: %v", err)
	}
}
