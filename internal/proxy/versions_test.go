package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/proxy"
	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
	"github.com/idemtest/idemtest/internal/scenario"
)

// rpcOver posts one JSON-RPC message to the proxy's /mcp as a streamable HTTP client does and
// returns the status, the headers and the JSON-RPC answer, read from a JSON body or from the
// SSE stream's event that carries it.
func rpcOver(ctx context.Context, t *testing.T, url, body string, header map[string]string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(strings.TrimSpace(data)), &m) == nil && m["id"] != nil {
				msg = m
				break
			}
		}
	} else {
		b, _ := io.ReadAll(resp.Body)
		if len(b) > 0 {
			if err := json.Unmarshal(b, &msg); err != nil {
				t.Fatalf("answer to %s: %d %q: %v", body, resp.StatusCode, b, err)
			}
		}
	}
	return resp.StatusCode, resp.Header, msg
}

// judgedOnce stops the proxy and checks that it judged one mutating call, passed, and that the
// server executed it once (asked directly).
func judgedOnce(t *testing.T, proxy *process, verdict, serverURL, acct string) {
	t.Helper()
	if n := executed(t, serverURL, acct); n != 1 {
		t.Errorf("the server executed %d refunds, want 1", n)
	}
	if code := proxy.terminate(t); code != 0 {
		t.Errorf("proxy exit %d:\n%s", code, proxy.stderr.String())
	}
	b, err := os.ReadFile(verdict)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Result   string `json:"result"`
		Calls    int    `json:"calls"`
		Mutating int    `json:"mutating"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.Result != "pass" || v.Calls != 1 || v.Mutating != 1 {
		t.Errorf("verdict %+v (%v), want pass with 1 mutating call:\n%s", v, err, b)
	}
}

// TestStreamableHTTPProxyEveryProtocolVersion: an agent that speaks any protocol revision from
// 2025-03-26 to the newest the Go SDK knows goes through the proxy to a Go SDK server and gets
// the revision it asked for; its tools are listed, its call is executed once and judged. The
// reference server (the SDK's stateful streamable HTTP handler) speaks the revisions up to
// 2025-11-25; the newest, 2026-07-28 (clients open with the stateless server/discover), needs
// a stateless handler, which statelessNewest serves. The Go SDK's client speaks each revision; for the revisions with an initialize
// handshake a raw client also checks the wire: the session id and the protocol-version header
// reach the server (which refuses a request without its session) and the notification is
// accepted (202).
func TestStreamableHTTPProxyEveryProtocolVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the reference server and the proxy per revision")
	}
	t.Run("2026-07-28 stateless go sdk server and client", statelessNewest)
	for i, version := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(version+" go sdk client", func(t *testing.T) {
			verdict := filepath.Join(t.TempDir(), "verdict.json")
			proxyURL, serverURL, proxy := startProxy(t, "/mcp", "--json", verdict)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "sdk-agent", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: proxyURL + "/mcp", MaxRetries: -1},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, proxy.stderr.String())
			}
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Errorf("negotiated %s through the proxy, want %s", got, version)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || !strings.Contains(toJSON(tools), `"name":"issue_refund"`) {
				t.Fatalf("tools/list: %v %v", tools, err)
			}
			acct := "acct_sdk_version_" + string(rune('a'+i))
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "issue_refund", Arguments: map[string]any{"accountId": acct, "amount": 5, "idempotencyKey": "v-1"}})
			if err != nil || res.IsError {
				t.Fatalf("tools/call: %v %v", res, err)
			}
			_ = cs.Close()
			judgedOnce(t, proxy, verdict, serverURL, acct)
		})
		t.Run(version+" raw client", func(t *testing.T) {
			verdict := filepath.Join(t.TempDir(), "verdict.json")
			proxyURL, serverURL, proxy := startProxy(t, "/mcp", "--json", verdict)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			endpoint := proxyURL + "/mcp"
			status, h, init := rpcOver(ctx, t, endpoint, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw-agent","version":"1"}}}`, nil)
			result, _ := init["result"].(map[string]any)
			if status != http.StatusOK || result["protocolVersion"] != version || init["id"] != 0.0 {
				t.Fatalf("initialize %s through the proxy: %d %v\n%s", version, status, init, proxy.stderr.String())
			}
			session := map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id")}
			if version != "2025-03-26" {
				session["MCP-Protocol-Version"] = version
			}
			if status, _, _ := rpcOver(ctx, t, endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session); status != http.StatusAccepted {
				t.Fatalf("notifications/initialized: %d, want 202", status)
			}
			_, _, listed := rpcOver(ctx, t, endpoint, `{"jsonrpc":"2.0","id":"list-1","method":"tools/list"}`, session)
			if !strings.Contains(toJSON(listed), `"name":"issue_refund"`) || listed["id"] != "list-1" {
				t.Fatalf("tools/list: %v", listed)
			}
			acct := "acct_raw_version_" + string(rune('a'+i))
			_, _, called := rpcOver(ctx, t, endpoint, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"issue_refund","arguments":{"accountId":"`+acct+`","amount":5,"idempotencyKey":"v-1"}}}`, session)
			if r, _ := called["result"].(map[string]any); r == nil || r["isError"] == true || called["id"] != 7.0 {
				t.Fatalf("tools/call: %v", called)
			}
			judgedOnce(t, proxy, verdict, serverURL, acct)
		})
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// statelessNewest: the Go SDK's client at protocol 2026-07-28 through the proxy (in this
// process) to a Go SDK server on a stateless streamable HTTP handler: the revision is
// negotiated, not downgraded, the server executes the call once and the proxy judges it.
func statelessNewest(t *testing.T) {
	const version = "2026-07-28"
	var mu sync.Mutex
	executed := 0
	server := mcp.NewServer(&mcp.Implementation{Name: "stateless", Version: "1"}, nil)
	type refund struct {
		AccountID      string  `json:"accountId"`
		Amount         float64 `json:"amount"`
		IdempotencyKey string  `json:"idempotencyKey"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "issue_refund"}, func(ctx context.Context, req *mcp.CallToolRequest, in refund) (*mcp.CallToolResult, map[string]any, error) {
		mu.Lock()
		defer mu.Unlock()
		executed++
		return nil, map[string]any{"refundId": "re_1"}, nil
	})
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer upstream.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	ready := make(chan string, 1)
	sess := &proxy.Session{
		HTTP: proxy.HTTPConfig{Listen: "127.0.0.1:0", Upstream: upstream.URL, Ready: writerFunc(func(p []byte) {
			if m := listening.FindSubmatch(p); m != nil {
				ready <- string(m[1])
			}
		})},
		Options: proxy.Options{Key: scenario.KeySpec{Arg: "idempotencyKey"}},
	}
	type result struct {
		calls *agentverdict.Calls
		err   error
	}
	done := make(chan result, 1)
	go func() {
		calls, _, err := sess.Run(runCtx)
		done <- result{calls, err}
	}()
	var proxyURL string
	select {
	case proxyURL = <-ready:
	case r := <-done:
		t.Fatalf("proxy: %v", r.err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "sdk-agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: proxyURL, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		stop()
		t.Fatalf("connect: %v", err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Errorf("negotiated %s through the proxy, want %s", got, version)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "issue_refund" {
		t.Errorf("tools/list: %v %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "issue_refund", Arguments: map[string]any{"accountId": "acct_1", "amount": 5, "idempotencyKey": "v-1"}})
	if err != nil || res.IsError {
		t.Errorf("tools/call: %v %v", res, err)
	}
	_ = cs.Close()
	stop()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if executed != 1 {
		t.Errorf("the server executed %d calls, want 1", executed)
	}
	v, err := agentverdict.JudgeCalls(context.Background(), r.calls, agentverdict.JudgeOptions{})
	if err != nil || v.Result() != "pass" || v.Calls != 1 || v.Mutating != 1 {
		t.Errorf("verdict %+v (%v), want pass with 1 mutating call", v, err)
	}
}
