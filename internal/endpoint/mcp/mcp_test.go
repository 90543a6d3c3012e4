package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/testenv"
)

func TestMain(m *testing.M) {
	// The stdio tests run this test binary as their MCP server.
	if os.Getenv("ENDPOINT_TEST_MCP_SERVER") == "1" {
		srv := testMCPServer(nil)
		if os.Getenv("ENDPOINT_TEST_MCP_SPAWN") == "1" {
			spawnStubborn()
		}
		if os.Getenv("ENDPOINT_TEST_MCP_GIANT") == "1" {
			addGiantTool(srv)
		}
		var t sdk.Transport = &sdk.StdioTransport{}
		if os.Getenv("ENDPOINT_TEST_MCP_PRETTY") == "1" {
			t = &sdk.IOTransport{Reader: os.Stdin, Writer: indentWriter{os.Stdout}}
		}
		_ = srv.Run(context.Background(), t)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testMCPServer is a real MCP server with tools that answer the ways servers do.
func testMCPServer(cancelled *sync.Map) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"idempotencyKey":{"type":"string"},"n":{"type":"number"}}}`)
	add := func(name string, ro bool, h sdk.ToolHandler) {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: ro}}, h)
	}
	add("echo", false, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args map[string]any
		json.Unmarshal(req.Params.Arguments, &args)
		res := &sdk.CallToolResult{StructuredContent: map[string]any{"args": args, "meta": req.Params.Meta}}
		if args["idempotencyKey"] == "replay" {
			res.Meta = sdk.Meta{"idempotentReplayed": true}
		}
		return res, nil
	})
	add("text", true, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: `{"n": 2}`}}}, nil
	})
	add("busy", false, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, StructuredContent: map[string]any{"code": "idempotency_key_in_progress"},
			Content: []sdk.Content{&sdk.TextContent{Text: "a request with this key is in progress"}}}, nil
	})
	add("broken", false, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "card declined"}}}, nil
	})
	add("declined", false, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: `{"error":{"code":"card_declined","message":"Your card was declined."}}`}}}, nil
	})
	add("slow", false, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		select {
		case <-ctx.Done():
			if cancelled != nil {
				cancelled.Store("slow", true)
			}
		case <-time.After(300 * time.Millisecond):
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
	})
	add("exit", false, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		os.Exit(3)
		return nil, nil
	})
	return srv
}

// recorder keeps every JSON-RPC method the server received over HTTP.
type recorder struct {
	mu      sync.Mutex
	methods []string
}

func (r *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			body, _ := io.ReadAll(req.Body)
			var msg struct {
				Method string `json:"method"`
			}
			json.Unmarshal(body, &msg)
			r.mu.Lock()
			r.methods = append(r.methods, msg.Method)
			r.mu.Unlock()
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, req)
	})
}

func (r *recorder) count(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.methods {
		if m == method {
			n++
		}
	}
	return n
}

func httpMCP(t *testing.T, cfg Config) (*Endpoint, *recorder, *sync.Map) {
	t.Helper()
	var cancelled sync.Map
	srv := testMCPServer(&cancelled)
	rec := &recorder{}
	hs := httptest.NewServer(rec.wrap(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)))
	t.Cleanup(hs.Close)
	cfg.URL = hs.URL
	ep := New(cfg)
	t.Cleanup(func() { ep.Close() })
	return ep, rec, &cancelled
}

func stdioMCP(t *testing.T, cfg Config) *Endpoint {
	t.Helper()
	cfg.Command = []string{os.Args[0]}
	cfg.Env = append(cfg.Env, "ENDPOINT_TEST_MCP_SERVER=1")
	ep := New(cfg)
	t.Cleanup(func() { ep.Close() })
	return ep
}

func TestMCPOutcomes(t *testing.T) {
	ctx := context.Background()
	for name, newEP := range map[string]func(t *testing.T) *Endpoint{
		"http":  func(t *testing.T) *Endpoint { ep, _, _ := httpMCP(t, Config{}); return ep },
		"stdio": func(t *testing.T) *Endpoint { return stdioMCP(t, Config{}) },
	} {
		t.Run(name, func(t *testing.T) {
			ep := newEP(t)
			tools, err := ep.Tools(ctx)
			if err != nil || len(tools) != 7 {
				t.Fatalf("tools: %v %v", tools, err)
			}
			if tools[6].Name != "text" || !tools[6].ReadOnly || !tools[0].AcceptsArg("idempotencyKey") {
				t.Errorf("tool details: %+v", tools)
			}
			for _, tc := range []struct {
				tool     string
				key      string
				outcome  outcome.Outcome
				conflict bool
				replayed bool
				errHas   string
			}{
				{"echo", "k1", outcome.OK, false, false, ""},
				{"echo", "replay", outcome.OK, false, true, ""},
				{"text", "", outcome.OK, false, false, ""},
				{"busy", "k1", outcome.Fail, true, false, "in progress"},
				{"broken", "k1", outcome.Fail, false, false, "card declined"},
				{"declined", "k1", outcome.Fail, false, false, "tool error: Your card was declined. (card_declined)"},
				{"nope", "k1", outcome.Fail, false, false, "json-rpc error"},
			} {
				res := ep.Call(ctx, endpoint.Request{Tool: tc.tool, Key: tc.key, Args: map[string]any{"n": 1}})
				if res.Outcome != tc.outcome || res.Conflict != tc.conflict || res.Replayed != tc.replayed || !strings.Contains(res.Error, tc.errHas) {
					t.Errorf("%s: got %s conflict=%v replayed=%v %q", tc.tool, res.Outcome, res.Conflict, res.Replayed, res.Error)
				}
			}
			res := ep.Call(ctx, endpoint.Request{Tool: "echo", Key: "k9", Args: map[string]any{"n": 1}})
			if args := res.Result.(map[string]any)["args"].(map[string]any); args["idempotencyKey"] != "k9" || args["n"] != 1.0 {
				t.Errorf("echo result %v", res.Result)
			}
			if res := ep.Call(ctx, endpoint.Request{Tool: "text"}); res.Result.(map[string]any)["n"] != 2.0 {
				t.Errorf("text content parsed as JSON: %#v", res.Result)
			}
		})
	}
}

func TestMCPKeyInMeta(t *testing.T) {
	ep, _, _ := httpMCP(t, Config{KeyMeta: "idempotencyKey"})
	res := ep.Call(context.Background(), endpoint.Request{Tool: "echo", Key: "k-meta"})
	m := res.Result.(map[string]any)
	if m["meta"].(map[string]any)["idempotencyKey"] != "k-meta" || m["args"].(map[string]any)["idempotencyKey"] != nil {
		t.Errorf("key not in _meta only: %v", m)
	}
}

func TestMCPTimeoutCancelsAndLostResponseIsSilent(t *testing.T) {
	ep, rec, cancelled := httpMCP(t, Config{})
	ctx := context.Background()
	res := ep.Call(ctx, endpoint.Request{Tool: "slow", Timeout: 50 * time.Millisecond})
	if res.Outcome != outcome.Info || !strings.Contains(res.Error, "timeout") {
		t.Errorf("timeout: %s %q", res.Outcome, res.Error)
	}
	testenv.Until(time.Minute, func() bool { return rec.count("notifications/cancelled") != 0 })
	if rec.count("notifications/cancelled") != 1 {
		t.Errorf("the server saw %d cancellations after a timeout, want 1", rec.count("notifications/cancelled"))
	}
	// The server cancels the handler's context after it reads the notification.
	testenv.Eventually(t, time.Minute, func() bool { _, ok := cancelled.Load("slow"); return ok }, "the slow handler's context is cancelled")

	before := rec.count("notifications/cancelled")
	res = ep.Call(ctx, endpoint.Request{Tool: "echo", Key: "k-lost", Args: map[string]any{"n": 5}, LoseResponse: true})
	if res.Outcome != outcome.Info || !res.Lost {
		t.Errorf("lost response: %s lost=%v %q", res.Outcome, res.Lost, res.Error)
	}
	// The agent never hears the answer; idemtest keeps it for the verdict.
	if m, _ := res.Result.(map[string]any); res.Discarded != outcome.OK || m == nil || m["args"].(map[string]any)["n"] != 5.0 {
		t.Errorf("discarded answer: %s %#v", res.Discarded, res.Result)
	}
	// The session still works, and the marker never reached the server.
	res = ep.Call(ctx, endpoint.Request{Tool: "echo", Key: "k-after"})
	if res.Outcome != outcome.OK {
		t.Fatalf("call after a lost response: %s %q", res.Outcome, res.Error)
	}
	// Counted once the next call's answer is back, rather than after a guessed pause: a
	// cancellation the lost call sent would have reached the server first.
	if n := rec.count("notifications/cancelled"); n != before {
		t.Errorf("a silently lost response sent %d cancellations", n-before)
	}
	// Of _meta the server sees the call's traceparent only, with the trace id the result names.
	meta, _ := res.Result.(map[string]any)["meta"].(map[string]any)
	if tp, _ := meta[endpoint.TraceParentHeader].(string); len(meta) != 1 || res.TraceID == "" || endpoint.TraceIDOf(tp) != res.TraceID {
		t.Errorf("server saw _meta %v; want only the traceparent of trace %q", meta, res.TraceID)
	}
}

func TestMCPServerExitsMidRun(t *testing.T) {
	ep := stdioMCP(t, Config{Timeout: time.Minute})
	ctx := context.Background()
	if res := ep.Call(ctx, endpoint.Request{Tool: "echo", Key: "k"}); res.Outcome != outcome.OK {
		t.Fatalf("first call: %s %q", res.Outcome, res.Error)
	}
	// The exit is noticed as such, not waited out as a timeout.
	res := ep.Call(ctx, endpoint.Request{Tool: "exit", Key: "k2"})
	if res.Outcome != outcome.Info || strings.Contains(res.Error, "timeout") {
		t.Errorf("server exit: %s %q", res.Outcome, res.Error)
	}
	res = ep.Call(ctx, endpoint.Request{Tool: "echo", Key: "k3"})
	if res.Outcome == outcome.OK || !strings.Contains(res.Error, "closed") {
		t.Errorf("call after the server exited: %s %q", res.Outcome, res.Error)
	}
}

func TestMCPStartErrors(t *testing.T) {
	ctx := context.Background()
	ep := New(Config{Command: []string{"idemtest-no-such-command"}})
	defer ep.Close()
	if res := ep.Call(ctx, endpoint.Request{Tool: "x"}); res.Outcome != outcome.Fail || !strings.Contains(res.Error, "not found") {
		t.Errorf("missing command: %s %q", res.Outcome, res.Error)
	}
	silent := New(Config{Command: []string{"sleep", "30"}, InitTimeout: 300 * time.Millisecond})
	defer silent.Close()
	// The message comes from the init timeout alone (the server would sleep 30s).
	if _, err := silent.Tools(ctx); err == nil || !strings.Contains(err.Error(), "did not answer initialize within 300ms") {
		t.Errorf("silent server: %v", err)
	}
}

// An MCP endpoint has no streams to end together: a single-packet fan-out is refused, not
// quietly a barrier.
func TestSinglePacketNeedsHTTP(t *testing.T) {
	ep, rec, _ := httpMCP(t, Config{})
	fo := endpoint.Fanout(context.Background(), ep, endpoint.Request{Tool: "echo"}, endpoint.FanoutOptions{Copies: 2, Sync: dispatch.SyncSinglePacket})
	if fo.Err == nil || !strings.Contains(fo.Err.Error(), "needs an HTTP endpoint") || fo.Results[1].Outcome != outcome.Fail {
		t.Errorf("MCP endpoint: %v %+v", fo.Err, fo.Results)
	}
	if n := rec.count("tools/call"); n != 0 {
		t.Errorf("the MCP server received %d calls", n)
	}
}
