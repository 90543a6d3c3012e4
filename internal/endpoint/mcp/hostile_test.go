package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/endpoint/endpointtest"
	"github.com/idemtest/idemtest/internal/outcome"
)

// hostileMCP is a real MCP server behind a handler that answers chosen tools/call requests the
// way a hostile or broken server does; everything else reaches the server.
func hostileMCP(t *testing.T, redirectTo string) *httptest.Server {
	t.Helper()
	real := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return testMCPServer(nil) }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			ID     any    `json:"id"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		json.Unmarshal(body, &msg)
		all := strings.HasSuffix(redirectTo, "#all")
		if redirectTo != "" && (all || msg.Method == "tools/call" && msg.Params.Name == "redirect") {
			http.Redirect(w, r, strings.TrimSuffix(redirectTo, "#all"), http.StatusTemporaryRedirect)
			return
		}
		if msg.Method != "tools/call" {
			real.ServeHTTP(w, r)
			return
		}
		switch msg.Params.Name {
		case "status500":
			http.Error(w, "internal error", http.StatusInternalServerError)
		case "status409":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"a call with this key is in progress"}}`))
		case "status409plain":
			http.Error(w, "conflict", http.StatusConflict)
		case "status400":
			http.Error(w, "bad request", http.StatusBadRequest)
		case "hangup":
			// The request has been read: close the connection without a word.
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		case "endlessjson":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc":"2.0","id":` + jsonText(msg.ID) + `,"result":{"content":[{"type":"text","text":"`))
			endless(w, r, []byte("xxxxxxxxxxxxxxxx"))
		case "endlesssse":
			w.Header().Set("Content-Type", "text/event-stream")
			endless(w, r, []byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n"))
		case "endlessevent":
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: "))
			endless(w, r, []byte("xxxxxxxxxxxxxxxx"))
		default:
			real.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// endless writes chunk until the client goes away.
func endless(w http.ResponseWriter, r *http.Request, chunk []byte) {
	buf := bytes.Repeat(chunk, 4096/len(chunk)+1)
	for r.Context().Err() == nil {
		if _, err := w.Write(buf); err != nil {
			return
		}
	}
}

func TestMCPHTTPClassification(t *testing.T) {
	srv := hostileMCP(t, "")
	ep := New(Config{URL: srv.URL, MaxResponseBytes: 256 << 10})
	t.Cleanup(func() { ep.Close() })
	ctx := context.Background()
	for _, tc := range []struct {
		tool     string
		outcome  outcome.Outcome
		status   int
		conflict bool
		errHas   string
	}{
		{"status500", outcome.Info, 500, false, "server error 500"},
		{"hangup", outcome.Info, 0, false, "connection lost after sending"},
		{"status409", outcome.Fail, 409, true, "in progress"},
		{"status409plain", outcome.Fail, 409, true, "conflict 409"},
		{"status400", outcome.Fail, 400, false, "client error 400"},
		{"endlessjson", outcome.Info, 0, false, "larger than 262144 bytes"},
		{"endlesssse", outcome.Info, 0, false, "larger than 262144 bytes"},
		{"endlessevent", outcome.Info, 0, false, "larger than 262144 bytes"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res := ep.Call(ctx, endpoint.Request{Tool: tc.tool, Key: "k-" + tc.tool})
			if res.Outcome != tc.outcome || res.Status != tc.status || res.Conflict != tc.conflict || !strings.Contains(res.Error, tc.errHas) {
				t.Errorf("got %s %d conflict=%v %q; want %s %d conflict=%v error containing %q",
					res.Outcome, res.Status, res.Conflict, res.Error, tc.outcome, tc.status, tc.conflict, tc.errHas)
			}
			// The session survives: the next call works.
			if res := ep.Call(ctx, endpoint.Request{Tool: "echo", Key: "after-" + tc.tool}); res.Outcome != outcome.OK {
				t.Errorf("call after %s: %s %q", tc.tool, res.Outcome, res.Error)
			}
		})
	}
}

func TestMCPHTTPNeverSentIsFail(t *testing.T) {
	srv := hostileMCP(t, "")
	ep := New(Config{URL: srv.URL})
	t.Cleanup(func() { ep.Close() })
	ctx := context.Background()
	if res := ep.Call(ctx, endpoint.Request{Tool: "echo", Key: "k1"}); res.Outcome != outcome.OK {
		t.Fatalf("first call: %s %q", res.Outcome, res.Error)
	}
	srv.Close() // the server dies between calls
	if res := ep.Call(ctx, endpoint.Request{Tool: "echo", Key: "k2"}); res.Outcome != outcome.Fail || !strings.Contains(res.Error, "not sent") {
		t.Errorf("call to a dead server: %s %q, want fail", res.Outcome, res.Error)
	}
	fo := endpoint.Fanout(ctx, ep, endpoint.Request{Tool: "echo", Key: "k3"}, endpoint.FanoutOptions{Copies: 4, Sync: dispatch.SyncBarrier})
	for i, res := range fo.Results {
		if res.Outcome != outcome.Fail {
			t.Errorf("copy %d to a dead server: %s %q, want fail", i+1, res.Outcome, res.Error)
		}
	}
}

func TestMCPStdioNeverSentIsFail(t *testing.T) {
	ep := stdioMCP(t, Config{})
	ctx := context.Background()
	if res := ep.Call(ctx, endpoint.Request{Tool: "exit", Key: "k1"}); res.Outcome != outcome.Info {
		t.Fatalf("the call that kills the server: %s %q, want info (it was sent)", res.Outcome, res.Error)
	}
	fo := endpoint.Fanout(ctx, ep, endpoint.Request{Tool: "echo", Key: "k2"}, endpoint.FanoutOptions{Copies: 4, Sync: dispatch.SyncBarrier})
	for i, res := range fo.Results {
		if res.Outcome != outcome.Fail || !strings.Contains(res.Error, "not sent") {
			t.Errorf("copy %d after the server exited: %s %q, want fail", i+1, res.Outcome, res.Error)
		}
	}
}

func TestMCPRedirectsReachNoRefusedHost(t *testing.T) {
	ctx := context.Background()
	refused := endpointtest.NewRefusedListener(t)
	headers := map[string]string{"Authorization": "Bearer SECRET-TOKEN"}

	t.Run("initialize redirected", func(t *testing.T) {
		srv := hostileMCP(t, refused.URL+"#all")
		ep := New(Config{URL: srv.URL, Headers: headers})
		t.Cleanup(func() { ep.Close() })
		if _, err := ep.Tools(ctx); err == nil || !strings.Contains(err.Error(), "redirected (307) to "+refused.URL) {
			t.Errorf("tools: %v, want a redirect naming %s", err, refused.URL)
		}
		if res := ep.Call(ctx, endpoint.Request{Tool: "echo", Key: "k"}); res.Outcome != outcome.Fail || !strings.Contains(res.Error, refused.URL) {
			t.Errorf("call: %s %q", res.Outcome, res.Error)
		}
	})
	t.Run("call redirected", func(t *testing.T) {
		srv := hostileMCP(t, refused.URL)
		ep := New(Config{URL: srv.URL, Headers: headers})
		t.Cleanup(func() { ep.Close() })
		res := ep.Call(ctx, endpoint.Request{Tool: "redirect", Key: "k"})
		if res.Outcome != outcome.Fail || res.Status != 307 || !strings.Contains(res.Error, "redirected (307) to "+refused.URL) {
			t.Errorf("redirected call: %s %d %q", res.Outcome, res.Status, res.Error)
		}
		fo := endpoint.Fanout(ctx, ep, endpoint.Request{Tool: "redirect", Key: "k2"}, endpoint.FanoutOptions{Copies: 4})
		for i, res := range fo.Results {
			if res.Outcome != outcome.Fail || !strings.Contains(res.Error, refused.URL) {
				t.Errorf("copy %d: %s %q", i+1, res.Outcome, res.Error)
			}
		}
		if res := ep.Call(ctx, endpoint.Request{Tool: "echo", Key: "k3"}); res.Outcome != outcome.OK {
			t.Errorf("call after a redirect: %s %q", res.Outcome, res.Error)
		}
	})
	t.Run("endpoint at the refused address", func(t *testing.T) {
		ep := New(Config{URL: refused.URL, Headers: headers})
		t.Cleanup(func() { ep.Close() })
		if res := ep.Call(ctx, endpoint.Request{Tool: "echo"}); res.Outcome != outcome.Fail || !strings.Contains(res.Error, "0.0.0.0 is not loopback") {
			t.Errorf("call: %s %q", res.Outcome, res.Error)
		}
	})
	refused.Check(t)
}

// TestMCPKeysAreChecked: a key that cannot be sent faithfully is refused before it reaches the
// server, on a call and on a fan-out's copies alike.
func TestMCPKeysAreChecked(t *testing.T) {
	ctx := context.Background()
	bad := "k-\x1b[31m-\u202e"
	m, rec, _ := httpMCP(t, Config{})
	req := endpoint.Request{Tool: "echo", Key: bad}
	results := map[string]endpoint.Result{
		"mcp call":   m.Call(ctx, req),
		"mcp fanout": endpoint.Fanout(ctx, m, req, endpoint.FanoutOptions{Copies: 2}).Results[0],
	}
	for name, res := range results {
		if res.Outcome != outcome.Fail || !strings.Contains(res.Error, "control character") {
			t.Errorf("%s: %s %q, want the key refused", name, res.Outcome, res.Error)
		}
	}
	if n := rec.count("tools/call"); n != 0 {
		t.Errorf("the MCP server received %d calls with a bad key", n)
	}
}
