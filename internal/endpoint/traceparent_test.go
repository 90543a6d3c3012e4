package endpoint

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/outcome"
)

// TestTraceParent: every call carries a W3C traceparent, and the result names the trace id the
// server received, whether sent alone, released as a last-byte copy, or as a single-packet
// HTTP/2 stream; a traceparent the endpoint's headers set is kept.
func TestTraceParent(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		mu.Lock()
		seen[TraceIDOf(r.Header.Get("traceparent"))]++
		mu.Unlock()
		w.Write([]byte(`{}`))
	}))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &p
	srv.Start()
	defer srv.Close()
	ep, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}", KeyHeader: "Idempotency-Key"})
	defer ep.Close()
	ctx := context.Background()
	req := Request{Tool: "x", Key: "k"}
	var results []Result
	results = append(results, ep.Call(ctx, req))
	for _, sync := range []dispatch.Sync{dispatch.SyncLastByte, dispatch.SyncSinglePacket} {
		results = append(results, Fanout(ctx, ep, req, FanoutOptions{Copies: 2, Sync: sync}).Results...)
	}
	ids := map[string]int{}
	for i, r := range results {
		if r.Outcome != outcome.OK || len(r.TraceID) != 32 {
			t.Fatalf("call %d: %s %q, trace id %q", i, r.Outcome, r.Error, r.TraceID)
		}
		ids[r.TraceID]++
	}
	mu.Lock()
	for id, n := range ids {
		if seen[id] != n {
			t.Errorf("trace %s: %d results name it, the server saw it %d times", id, n, seen[id])
		}
	}
	mu.Unlock()
	// One trace per call; the copies of a single-packet fan-out share their request's.
	if len(ids) != 4 {
		t.Errorf("%d distinct trace ids over 5 calls, want 4 (the 2 single-packet copies share one): %v", len(ids), ids)
	}

	fixed := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ep2, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}", Headers: map[string]string{"traceparent": fixed}})
	defer ep2.Close()
	if r := ep2.Call(ctx, req); r.TraceID != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("configured traceparent: result trace %q", r.TraceID)
	}
	if TraceIDOf("00-xyz-1-01") != "" || TraceIDOf("") != "" {
		t.Error("TraceIDOf accepted a malformed traceparent")
	}
}
