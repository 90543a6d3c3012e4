package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/proxy"
	"github.com/idemtest/idemtest/internal/scenario"
)

// wireServer is a streamable HTTP server written to the byte, for what an SDK server does not
// let a test control: each SSE answer sends one event, then waits until the test has read it
// (step) before it sends the next, so an event the proxy held until the stream closed never
// arrives. It records the headers of every request.
type wireServer struct {
	step chan struct{}

	mu   sync.Mutex
	seen []http.Header
}

// Events of the wire server, exactly as it writes them.
const (
	progressEvent = "id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n"
	getEvent1     = "id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
	getEvent2     = "id: 8\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}\n\n"
)

// answer is the wire server's answer event to a request with the raw JSON-RPC id.
func answer(id string) string {
	return "id: 2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"echo\":" + id + "}}\n\n"
}

func (s *wireServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Header.Clone())
	s.mu.Unlock()
	w.Header().Set("Mcp-Session-Id", "sess-wire-1")
	stream := func(first, second string) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, first)
		_ = http.NewResponseController(w).Flush()
		select {
		case <-s.step:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, second)
	}
	switch r.Method {
	case http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet:
		stream(getEvent1, getEvent2)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	switch {
	case msg.ID == nil:
		w.WriteHeader(http.StatusAccepted)
	case msg.Method == "json/echo":
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"echo":%s}}`, msg.ID, msg.ID)
	default:
		stream(progressEvent, answer(string(msg.ID)))
	}
}

// startWireProxy starts the wire server and the proxy (in this process) in front of it; both
// stop when the test ends.
func startWireProxy(t *testing.T) (*wireServer, string) {
	t.Helper()
	ws := &wireServer{step: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: ws}
	go func() { _ = srv.Serve(ln) }()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	rec := proxy.NewRecorder(proxy.Options{Key: scenario.KeySpec{Arg: "idempotencyKey"}, Mutating: []string{}})
	go func() {
		done <- proxy.RunHTTP(ctx, rec, proxy.HTTPConfig{
			Listen: "127.0.0.1:0", Upstream: "http://" + ln.Addr().String() + "/mcp",
			Ready: writerFunc(func(p []byte) {
				if m := listening.FindSubmatch(p); m != nil {
					ready <- string(m[1])
				}
			}),
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = srv.Close()
	})
	select {
	case u := <-ready:
		return ws, u
	case err := <-done:
		t.Fatalf("proxy: %v", err)
	}
	return nil, ""
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// readEvent reads one server-sent event whole, up to and with the blank line that dispatches it.
func readEvent(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			return b.String(), fmt.Errorf("stream ended inside an event %q: %w", b.String(), err)
		}
		if line == "\n" || line == "\r\n" {
			return b.String(), nil
		}
	}
}

// TestStreamableHTTPPassesTheWireThrough: what the agent gets through the proxy is what the
// server sent, event by event as it comes, each with its closing blank line (an SSE client
// drops an event the stream ends without it), every JSON-RPC id as it was spelled, and the
// session's headers both ways.
func TestStreamableHTTPPassesTheWireThrough(t *testing.T) {
	ws, proxyURL := startWireProxy(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	do := func(method, body string, header map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, proxyURL+"/mcp", strings.NewReader(body))
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
		return resp
	}
	// stream reads the first event, lets the server send the second, and reads it and the end.
	stream := func(resp *http.Response, first, second string) {
		t.Helper()
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("content type %q", ct)
		}
		if got := resp.Header.Get("Mcp-Session-Id"); got != "sess-wire-1" {
			t.Errorf("Mcp-Session-Id %q, want sess-wire-1", got)
		}
		br := bufio.NewReader(resp.Body)
		// The server sends the second event only once the first arrived: a proxy that held
		// events until the stream closed never delivers it, and the test's deadline fails it.
		got, err := readEvent(br)
		if err != nil || got != first {
			t.Fatalf("first event %q (%v), want %q", got, err, first)
		}
		ws.step <- struct{}{}
		if got, err = readEvent(br); err != nil || got != second {
			t.Fatalf("second event %q (%v), want %q", got, err, second)
		}
		if rest, _ := io.ReadAll(br); len(rest) > 0 {
			t.Errorf("after the answer: %q", rest)
		}
	}
	for _, id := range []string{"0", `"req-0"`, "12345678901234567890123", "-1.5e3"} {
		t.Run("sse answer to id "+id, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{"_meta":{"progressToken":1}}}`
			stream(do(http.MethodPost, body, map[string]string{"Mcp-Session-Id": "sess-wire-1"}), progressEvent, answer(id))
		})
		t.Run("json answer to id "+id, func(t *testing.T) {
			resp := do(http.MethodPost, `{"jsonrpc":"2.0","id":`+id+`,"method":"json/echo"}`, nil)
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			want := `{"jsonrpc":"2.0","id":` + id + `,"result":{"echo":` + id + `}}`
			if resp.StatusCode != http.StatusOK || string(got) != want || resp.Header.Get("Mcp-Session-Id") != "sess-wire-1" {
				t.Errorf("%d %q (session %q), want 200 %q", resp.StatusCode, got, resp.Header.Get("Mcp-Session-Id"), want)
			}
		})
	}
	t.Run("notification", func(t *testing.T) {
		resp := do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || len(got) > 0 {
			t.Errorf("%d %q, want 202 and no body", resp.StatusCode, got)
		}
	})
	t.Run("standalone GET stream resumed", func(t *testing.T) {
		stream(do(http.MethodGet, "", map[string]string{"Mcp-Session-Id": "sess-wire-1", "Last-Event-ID": "6"}), getEvent1, getEvent2)
	})
	t.Run("DELETE", func(t *testing.T) {
		resp := do(http.MethodDelete, "", map[string]string{"Mcp-Session-Id": "sess-wire-1"})
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("status %d, want 204", resp.StatusCode)
		}
	})
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var lastEventID, sessions int
	for _, h := range ws.seen {
		if h.Get("Mcp-Session-Id") == "sess-wire-1" {
			sessions++
		}
		if h.Get("Last-Event-ID") == "6" {
			lastEventID++
		}
		if !bytes.Contains([]byte(h.Get("Accept")), []byte("text/event-stream")) {
			t.Errorf("the server got Accept %q", h.Get("Accept"))
		}
	}
	// 4 SSE posts, the GET and the DELETE carried the session; the GET its Last-Event-ID.
	if sessions != 6 || lastEventID != 1 {
		t.Errorf("the server saw Mcp-Session-Id on %d requests (want 6) and Last-Event-ID on %d (want 1)", sessions, lastEventID)
	}
}
