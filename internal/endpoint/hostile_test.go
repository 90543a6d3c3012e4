package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// refusedListener is a loopback server that the policy must never let idemtest reach: it is
// addressed as 0.0.0.0, which Linux connects to this machine's listeners but which is not a
// loopback address. It counts what arrives.
type refusedListener struct {
	requests atomic.Int32
	mu       sync.Mutex
	auth     []string
	// URL is the refused address of the listener.
	URL string
}

func newRefusedListener(t *testing.T) *refusedListener {
	t.Helper()
	l := &refusedListener{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.requests.Add(1)
		l.mu.Lock()
		l.auth = append(l.auth, r.Header.Get("Authorization"))
		l.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	l.URL = "http://0.0.0.0:" + port + "/mcp"
	// Without the policy the refused address does reach the listener: the test means something.
	resp, err := http.Get(l.URL)
	if err != nil {
		t.Skipf("0.0.0.0 does not reach loopback listeners here: %v", err)
	}
	resp.Body.Close()
	l.requests.Store(0)
	l.auth = nil
	return l
}

func (l *refusedListener) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.requests.Load(); n != 0 {
		t.Errorf("the refused listener received %d requests (Authorization headers %q)", n, l.auth)
	}
}

// hostileMCP is a real MCP server behind a handler that answers chosen tools/call requests the
// way a hostile or broken server does; everything else reaches the server.
func hostileMCP(t *testing.T, redirectTo string) *httptest.Server {
	t.Helper()
	real := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testMCPServer(nil) }, nil)
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
	ep := NewMCP(MCPConfig{URL: srv.URL, MaxResponseBytes: 256 << 10})
	t.Cleanup(func() { ep.Close() })
	ctx := context.Background()
	for _, tc := range []struct {
		tool     string
		outcome  Outcome
		status   int
		conflict bool
		errHas   string
	}{
		{"status500", Info, 500, false, "server error 500"},
		{"hangup", Info, 0, false, "connection lost after sending"},
		{"status409", Fail, 409, true, "in progress"},
		{"status409plain", Fail, 409, true, "conflict 409"},
		{"status400", Fail, 400, false, "client error 400"},
		{"endlessjson", Info, 0, false, "larger than 262144 bytes"},
		{"endlesssse", Info, 0, false, "larger than 262144 bytes"},
		{"endlessevent", Info, 0, false, "larger than 262144 bytes"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res := ep.Call(ctx, Request{Tool: tc.tool, Key: "k-" + tc.tool})
			if res.Outcome != tc.outcome || res.Status != tc.status || res.Conflict != tc.conflict || !strings.Contains(res.Error, tc.errHas) {
				t.Errorf("got %s %d conflict=%v %q; want %s %d conflict=%v error containing %q",
					res.Outcome, res.Status, res.Conflict, res.Error, tc.outcome, tc.status, tc.conflict, tc.errHas)
			}
			// The session survives: the next call works.
			if res := ep.Call(ctx, Request{Tool: "echo", Key: "after-" + tc.tool}); res.Outcome != OK {
				t.Errorf("call after %s: %s %q", tc.tool, res.Outcome, res.Error)
			}
		})
	}
}

func TestMCPHTTPNeverSentIsFail(t *testing.T) {
	srv := hostileMCP(t, "")
	ep := NewMCP(MCPConfig{URL: srv.URL})
	t.Cleanup(func() { ep.Close() })
	ctx := context.Background()
	if res := ep.Call(ctx, Request{Tool: "echo", Key: "k1"}); res.Outcome != OK {
		t.Fatalf("first call: %s %q", res.Outcome, res.Error)
	}
	srv.Close() // the server dies between calls
	if res := ep.Call(ctx, Request{Tool: "echo", Key: "k2"}); res.Outcome != Fail || !strings.Contains(res.Error, "not sent") {
		t.Errorf("call to a dead server: %s %q, want fail", res.Outcome, res.Error)
	}
	fo := Fanout(ctx, ep, Request{Tool: "echo", Key: "k3"}, FanoutOptions{Copies: 4, Sync: SyncBarrier})
	for i, res := range fo.Results {
		if res.Outcome != Fail {
			t.Errorf("copy %d to a dead server: %s %q, want fail", i+1, res.Outcome, res.Error)
		}
	}
}

func TestMCPStdioNeverSentIsFail(t *testing.T) {
	ep := stdioMCP(t, MCPConfig{})
	ctx := context.Background()
	if res := ep.Call(ctx, Request{Tool: "exit", Key: "k1"}); res.Outcome != Info {
		t.Fatalf("the call that kills the server: %s %q, want info (it was sent)", res.Outcome, res.Error)
	}
	fo := Fanout(ctx, ep, Request{Tool: "echo", Key: "k2"}, FanoutOptions{Copies: 4, Sync: SyncBarrier})
	for i, res := range fo.Results {
		if res.Outcome != Fail || !strings.Contains(res.Error, "not sent") {
			t.Errorf("copy %d after the server exited: %s %q, want fail", i+1, res.Outcome, res.Error)
		}
	}
}

func TestMCPRedirectsReachNoRefusedHost(t *testing.T) {
	ctx := context.Background()
	refused := newRefusedListener(t)
	headers := map[string]string{"Authorization": "Bearer SECRET-TOKEN"}

	t.Run("initialize redirected", func(t *testing.T) {
		srv := hostileMCP(t, refused.URL+"#all")
		ep := NewMCP(MCPConfig{URL: srv.URL, Headers: headers})
		t.Cleanup(func() { ep.Close() })
		if _, err := ep.Tools(ctx); err == nil || !strings.Contains(err.Error(), "redirected (307) to "+refused.URL) {
			t.Errorf("tools: %v, want a redirect naming %s", err, refused.URL)
		}
		if res := ep.Call(ctx, Request{Tool: "echo", Key: "k"}); res.Outcome != Fail || !strings.Contains(res.Error, refused.URL) {
			t.Errorf("call: %s %q", res.Outcome, res.Error)
		}
	})
	t.Run("call redirected", func(t *testing.T) {
		srv := hostileMCP(t, refused.URL)
		ep := NewMCP(MCPConfig{URL: srv.URL, Headers: headers})
		t.Cleanup(func() { ep.Close() })
		res := ep.Call(ctx, Request{Tool: "redirect", Key: "k"})
		if res.Outcome != Fail || res.Status != 307 || !strings.Contains(res.Error, "redirected (307) to "+refused.URL) {
			t.Errorf("redirected call: %s %d %q", res.Outcome, res.Status, res.Error)
		}
		fo := Fanout(ctx, ep, Request{Tool: "redirect", Key: "k2"}, FanoutOptions{Copies: 4})
		for i, res := range fo.Results {
			if res.Outcome != Fail || !strings.Contains(res.Error, refused.URL) {
				t.Errorf("copy %d: %s %q", i+1, res.Outcome, res.Error)
			}
		}
		if res := ep.Call(ctx, Request{Tool: "echo", Key: "k3"}); res.Outcome != OK {
			t.Errorf("call after a redirect: %s %q", res.Outcome, res.Error)
		}
	})
	t.Run("endpoint at the refused address", func(t *testing.T) {
		ep := NewMCP(MCPConfig{URL: refused.URL, Headers: headers})
		t.Cleanup(func() { ep.Close() })
		if res := ep.Call(ctx, Request{Tool: "echo"}); res.Outcome != Fail || !strings.Contains(res.Error, "0.0.0.0 is not loopback") {
			t.Errorf("call: %s %q", res.Outcome, res.Error)
		}
	})
	t.Run("http endpoint", func(t *testing.T) {
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
				if res.Outcome != Fail || !strings.Contains(res.Error, "0.0.0.0") {
					t.Errorf("%s %s: %s %q", url, name, res.Outcome, res.Error)
				}
			}
			fo := Fanout(ctx, ep, Request{Tool: "t", Key: "k"}, FanoutOptions{Copies: 2, Sync: SyncSinglePacket})
			for _, res := range fo.Results {
				if url == refused.URL+"/{tool}" && (res.Outcome != Fail || !strings.Contains(res.Error, "0.0.0.0")) {
					t.Errorf("single-packet to the refused address: %s %q", res.Outcome, res.Error)
				}
			}
		}
	})
	refused.check(t)
}

func TestKeysAreCheckedOnEveryPath(t *testing.T) {
	var received atomic.Int32
	srv := toolServer(t, &received)
	ctx := context.Background()
	bad := "k-\x1b[31m-\u202e"
	h, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}", KeyHeader: "Idempotency-Key"})
	t.Cleanup(func() { h.Close() })
	ha, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}", KeyArg: "idempotencyKey"})
	t.Cleanup(func() { ha.Close() })
	m, rec, _ := httpMCP(t, MCPConfig{})
	req := Request{Tool: "ok", Key: bad}
	results := map[string]Result{
		"http call":          h.Call(ctx, req),
		"http arg call":      ha.Call(ctx, req),
		"http prepared":      Fire(ctx, h.Prepare(ctx, req, PrepareOptions{LastByte: true})),
		"mcp call":           m.Call(ctx, Request{Tool: "echo", Key: bad}),
		"http fanout":        Fanout(ctx, h, req, FanoutOptions{Copies: 2, Sync: SyncLastByte}).Results[0],
		"http single-packet": Fanout(ctx, h, req, FanoutOptions{Copies: 2, Sync: SyncSinglePacket}).Results[0],
		"mcp fanout":         Fanout(ctx, m, Request{Tool: "echo", Key: bad}, FanoutOptions{Copies: 2}).Results[0],
	}
	for name, res := range results {
		if res.Outcome != Fail || !strings.Contains(res.Error, "control character") {
			t.Errorf("%s: %s %q, want the key refused", name, res.Outcome, res.Error)
		}
	}
	if n := received.Load(); n != 0 {
		t.Errorf("the HTTP server received %d requests with a bad key", n)
	}
	if n := rec.count("tools/call"); n != 0 {
		t.Errorf("the MCP server received %d calls with a bad key", n)
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
