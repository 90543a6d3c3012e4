package stateview

import (
	"testing"

	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
)

func TestIDLike(t *testing.T) {
	for s, want := range map[string]bool{
		"re_4f2a91c0": true, "3f1c6a52-8a8e-4c55-9a51-2a1d1b7cb0a1": true, "100234": true,
		"succeeded": false, "acct 12345": false, "a1": false,
		"2026-12-03T08:12:18.123Z": false, "2026-12-03": false,
	} {
		if got := idLike(s); got != want {
			t.Errorf("idLike(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestMinted(t *testing.T) {
	b := Snapshots{Ignore: []string{"requestId"}}
	ok := func(step string, args map[string]any, res any) result.Call {
		return result.Call{Step: step, Key: "k1", Outcome: outcome.OK, Args: args, Result: res}
	}
	args := map[string]any{"accountId": "acct_1_abc123"}
	for _, tc := range []struct {
		name  string
		calls []result.Call
		want  string
	}{
		{"a new refund id", []result.Call{ok("first", args, map[string]any{"refundId": "re_111111"}), ok("retry", args, map[string]any{"refundId": "re_222222"})}, "refundId re_222222 (retry)"},
		{"the same answer", []result.Call{ok("first", args, map[string]any{"refundId": "re_111111"}), ok("retry", args, map[string]any{"refundId": "re_111111"})}, ""},
		{"nothing created", []result.Call{ok("first", args, []any{map[string]any{"name": "acct_1_abc123"}}), ok("retry", args, []any{})}, ""},
		{"an argument echoed", []result.Call{ok("first", args, map[string]any{"ok": true}), ok("retry", args, map[string]any{"accountId": "acct_1_abc123"})}, ""},
		{"an ignored request id", []result.Call{ok("first", args, map[string]any{"requestId": "req_111111"}), ok("retry", args, map[string]any{"requestId": "req_222222"})}, ""},
		{"a refused retry", []result.Call{ok("first", args, map[string]any{"refundId": "re_111111"}), {Step: "retry", Outcome: outcome.Fail, Result: map[string]any{"error": "e_999999"}}}, ""},
	} {
		f, found := b.Minted(&result.Trial{Calls: tc.calls}, "first", "retry")
		got := ""
		if found {
			got = f.String()
		}
		if got != tc.want {
			t.Errorf("%s: minted %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestMintedKey: a call given up on has no answer, so the retry's id is the first seen; a later
// call with the same key under another step (a settled retry) that brings a new id is caught.
func TestMintedKey(t *testing.T) {
	b := Snapshots{}
	args := map[string]any{"accountId": "acct_1_abc123"}
	tr := &result.Trial{Calls: []result.Call{
		{Step: "first", Key: "k1", Outcome: outcome.Info, Args: args},
		{Step: "retry", Key: "k1", Outcome: outcome.OK, Args: args, Result: map[string]any{"refundId": "re_111111"}},
		{Step: "again", Key: "k1", Outcome: outcome.OK, Args: args, Result: map[string]any{"refundId": "re_222222"}},
		{Step: "other", Key: "k2", Outcome: outcome.OK, Args: args, Result: map[string]any{"refundId": "re_333333"}},
	}}
	if f, ok := b.MintedKey(tr, "retry"); !ok || f.String() != "refundId re_222222 (again)" {
		t.Errorf("mintedKey = %v %v, want refundId re_222222 (again)", f, ok)
	}
	if _, ok := b.Minted(tr, "first", "retry"); ok {
		t.Error("minted over first and retry found a new id; the retry's is the first answer")
	}
}
