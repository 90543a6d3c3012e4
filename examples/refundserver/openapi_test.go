package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/idemtest/idemtest/internal/openapi"
)

// TestOpenAPIDocument loads the document the server serves and calls every operation it names,
// as the document says to call it: the document stays true to what the server does.
func TestOpenAPIDocument(t *testing.T) {
	s := startServer(t, "memory", config{})
	spec, err := openapi.Load(t.Context(), s.URL+"/openapi.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Version != "3.1.0" || len(spec.Servers) != 1 || spec.Servers[0] != s.URL+"/" {
		t.Fatalf("version %s, servers %v", spec.Version, spec.Servers)
	}
	acct := randomID("acct_")
	call := func(tool, key string, args map[string]any) (int, map[string]any, http.Header) {
		t.Helper()
		op, ok := spec.Operation(tool)
		if !ok {
			t.Fatalf("the document has no operation %s", tool)
		}
		path, query, body := op.Split(args)
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(op.Method, op.URL(spec.Servers[0], path, query), rd)
		if key != "" {
			req.Header.Set(op.KeyHeader, key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out, resp.Header
	}
	called := map[string]bool{}
	for _, o := range spec.Operations {
		called[o.Tool] = false
	}
	refund := map[string]any{"accountId": acct, "amount": 49.99}
	if op, _ := spec.Operation("issue_refund"); op.KeyHeader != "Idempotency-Key" || op.Method != "POST" || !op.Mutating {
		t.Errorf("issue_refund maps to %+v", op)
	}
	if st, _, _ := call("issue_refund", "", refund); st != 400 {
		t.Errorf("issue_refund without its declared key: %d, want 400", st)
	}
	st, first, _ := call("issue_refund", "k1", refund)
	if st != 200 || first["refundId"] == nil {
		t.Fatalf("issue_refund: %d %v", st, first)
	}
	if st, again, h := call("issue_refund", "k1", refund); st != 200 || h.Get("Idempotent-Replayed") != "true" || again["refundId"] != first["refundId"] {
		t.Errorf("issue_refund retried: %d %v", st, again)
	}
	called["issue_refund"] = true
	if op, _ := spec.Operation("list_refunds"); !op.ReadOnly || op.Method != "GET" {
		t.Errorf("list_refunds maps to %+v", op)
	}
	st, listed, _ := call("list_refunds", "", map[string]any{"accountId": acct})
	if refunds, _ := listed["refunds"].([]any); st != 200 || len(refunds) != 1 {
		t.Errorf("list_refunds: %d %v", st, listed)
	}
	called["list_refunds"] = true
	if st, out, _ := call("set_account_status", "", map[string]any{"accountId": acct, "status": "suspended"}); st != 200 {
		t.Errorf("set_account_status: %d %v", st, out)
	}
	called["set_account_status"] = true
	for tool, ok := range called {
		if !ok {
			t.Errorf("the document names %s, which this test does not call", tool)
		}
	}
}
