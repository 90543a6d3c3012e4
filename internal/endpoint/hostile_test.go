package endpoint

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/endpoint/endpointtest"
	"github.com/idemtest/idemtest/internal/outcome"
)

func TestHTTPRedirectsReachNoRefusedHost(t *testing.T) {
	ctx := context.Background()
	refused := endpointtest.NewRefusedListener(t)
	headers := map[string]string{"Authorization": "Bearer SECRET-TOKEN"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, refused.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	for _, url := range []string{srv.URL + "/{tool}", refused.URL + "/{tool}"} {
		ep, _ := NewHTTP(HTTPConfig{URL: url, Headers: headers, KeyHeader: "Idempotency-Key"})
		t.Cleanup(func() { ep.Close() })
		for name, res := range map[string]Result{
			"call":     ep.Call(ctx, Request{Tool: "t", Key: "k"}),
			"prepared": Fire(ctx, ep.Prepare(ctx, Request{Tool: "t", Key: "k"}, PrepareOptions{LastByte: true})),
		} {
			if res.Outcome != outcome.Fail || !strings.Contains(res.Error, "0.0.0.0") {
				t.Errorf("%s %s: %s %q", url, name, res.Outcome, res.Error)
			}
		}
		fo := Fanout(ctx, ep, Request{Tool: "t", Key: "k"}, FanoutOptions{Copies: 2, Sync: dispatch.SyncSinglePacket})
		for _, res := range fo.Results {
			if url == refused.URL+"/{tool}" && (res.Outcome != outcome.Fail || !strings.Contains(res.Error, "0.0.0.0")) {
				t.Errorf("single-packet to the refused address: %s %q", res.Outcome, res.Error)
			}
		}
	}
	refused.Check(t)
}

// TestKeysAreCheckedOnEveryPath covers the HTTP paths; TestMCPKeysAreChecked in endpoint/mcp the
// MCP ones.
func TestKeysAreCheckedOnEveryPath(t *testing.T) {
	var received atomic.Int32
	srv := toolServer(t, &received)
	ctx := context.Background()
	bad := "k-\x1b[31m-\u202e"
	h, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}", KeyHeader: "Idempotency-Key"})
	t.Cleanup(func() { h.Close() })
	ha, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}", KeyArg: "idempotencyKey"})
	t.Cleanup(func() { ha.Close() })
	req := Request{Tool: "ok", Key: bad}
	results := map[string]Result{
		"http call":          h.Call(ctx, req),
		"http arg call":      ha.Call(ctx, req),
		"http prepared":      Fire(ctx, h.Prepare(ctx, req, PrepareOptions{LastByte: true})),
		"http fanout":        Fanout(ctx, h, req, FanoutOptions{Copies: 2, Sync: dispatch.SyncLastByte}).Results[0],
		"http single-packet": Fanout(ctx, h, req, FanoutOptions{Copies: 2, Sync: dispatch.SyncSinglePacket}).Results[0],
	}
	for name, res := range results {
		if res.Outcome != outcome.Fail || !strings.Contains(res.Error, "control character") {
			t.Errorf("%s: %s %q, want the key refused", name, res.Outcome, res.Error)
		}
	}
	if n := received.Load(); n != 0 {
		t.Errorf("the HTTP server received %d requests with a bad key", n)
	}
	for _, good := range []string{"abc-1", "sess-ünïcode", ""} {
		if err := CheckKey(good); err != nil {
			t.Errorf("CheckKey(%q): %v", good, err)
		}
	}
	for _, bad := range []string{"a\nb", "a\x00", "a\x7f", "a\u0085", "\xff", "a\u2066b"} {
		if CheckKey(bad) == nil {
			t.Errorf("CheckKey(%q) accepted it", bad)
		}
	}
}
