package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/trace"
)

// TestProxyTraceParent: the proxy gives every tool call a W3C traceparent when the agent sent
// none (the HTTP header; over MCP, params._meta.traceparent), keeps the agent's own, and
// records in its trace the trace id the server received, so the server's spans of each call
// can be found from the record.
func TestProxyTraceParent(t *testing.T) {
	const agents = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	var mu sync.Mutex
	var seen []string // the traceparents the server received, in order
	saw := func(tp string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, tp)
	}
	check := func(t *testing.T, record string) {
		t.Helper()
		_, calls, err := trace.ReadFile(context.Background(), record)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(calls) != 2 || len(seen) != 2 {
			t.Fatalf("%d recorded calls, %d seen by the server; want 2 and 2", len(calls), len(seen))
		}
		if id := endpoint.TraceIDOf(seen[0]); id == "" || id == endpoint.TraceIDOf(agents) || calls[0].TraceID != id {
			t.Errorf("call without a traceparent: server got %q, record says trace %q", seen[0], calls[0].TraceID)
		}
		if seen[1] != agents || calls[1].TraceID != endpoint.TraceIDOf(agents) {
			t.Errorf("call with the agent's traceparent: server got %q, record says trace %q", seen[1], calls[1].TraceID)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("http", func(t *testing.T) {
		seen = nil
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			saw(r.Header.Get("traceparent"))
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true}`))
		}))
		defer up.Close()
		record := filepath.Join(t.TempDir(), "trace.jsonl")
		proxy, proxyURL := startListening(t, self, []string{"IDEMTEST_PROXY_TEST_MAIN=1"},
			"proxy", "--http", "--listen", "127.0.0.1:0", "--upstream", up.URL, "--record", record)
		for i, tp := range []string{"", agents} {
			req, _ := http.NewRequest(http.MethodPost, proxyURL+"/tools/issue_refund", strings.NewReader(`{"amount":1}`))
			req.Header.Set("Idempotency-Key", "k"+string(rune('0'+i)))
			if tp != "" {
				req.Header.Set("traceparent", tp)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		proxy.terminate(t)
		check(t, record)
	})

	t.Run("mcp", func(t *testing.T) {
		seen = nil
		srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
		srv.AddTool(&mcp.Tool{Name: "issue_refund", InputSchema: map[string]any{"type": "object"}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				tp, _ := req.Params.Meta["traceparent"].(string)
				saw(tp)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			})
		up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		defer up.Close()
		record := filepath.Join(t.TempDir(), "trace.jsonl")
		proxy, proxyURL := startListening(t, self, []string{"IDEMTEST_PROXY_TEST_MAIN=1"},
			"proxy", "--listen", "127.0.0.1:0", "--upstream", up.URL, "--record", record)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
			Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: proxyURL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, tp := range []string{"", agents} {
			p := &mcp.CallToolParams{Name: "issue_refund", Arguments: map[string]any{"idempotencyKey": "k" + string(rune('0'+i))}}
			if tp != "" {
				p.Meta = mcp.Meta{"traceparent": tp}
			}
			if _, err := cs.CallTool(context.Background(), p); err != nil {
				t.Fatal(err)
			}
		}
		cs.Close()
		proxy.terminate(t)
		check(t, record)
	})
}

// TestStdioProxyTraceParent: over stdio too, the proxy gives a tools/call without one a
// traceparent in params._meta and keeps the agent's; the reference server's exported span of
// each call is in the trace the proxy's record names.
func TestStdioProxyTraceParent(t *testing.T) {
	const agents = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	dir := t.TempDir()
	record, spans := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "spans.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, c, stderr, err := connectProxy(ctx, t, []string{"--record", record}, refundServer(t), "--stdio", "--otel-file", spans)
	if err != nil {
		t.Fatalf("connect through the proxy: %v\n%s", err, stderr)
	}
	for i, tp := range []string{"", agents} {
		p := &mcp.CallToolParams{Name: "issue_refund", Arguments: map[string]any{"accountId": "acct_tp", "amount": 1, "idempotencyKey": fmt.Sprintf("tp-%d", i)}}
		if tp != "" {
			p.Meta = mcp.Meta{"traceparent": tp}
		}
		if _, err := cs.CallTool(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	cs.Close()
	_ = c.Wait()
	_, calls, err := trace.ReadFile(context.Background(), record)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(spans)
	if err != nil {
		t.Fatalf("the server exported no spans: %v\n%s", err, stderr)
	}
	// The server's spans, in OTLP JSON (ids in hex, the Go SDK's in capitals).
	exported := strings.ToLower(string(b))
	var refunds []trace.Call
	for _, c := range calls {
		if c.Tool == "issue_refund" {
			refunds = append(refunds, c)
		}
	}
	if len(refunds) != 2 {
		t.Fatalf("%d refunds recorded, want 2", len(refunds))
	}
	if id := refunds[0].TraceID; len(id) != 32 || id == endpoint.TraceIDOf(agents) || !strings.Contains(exported, `"traceid":"`+id+`"`) {
		t.Errorf("call without a traceparent: recorded trace %q, not among the server's spans", id)
	}
	if id := refunds[1].TraceID; id != endpoint.TraceIDOf(agents) || !strings.Contains(exported, `"traceid":"`+id+`"`) {
		t.Errorf("call with the agent's traceparent: recorded trace %q, not the agent's among the server's spans", id)
	}
}
