package endpoint

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/outcome"
)

// toolServer answers each tool the way a real server might fail.
func toolServer(t *testing.T, received *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		body, _ := io.ReadAll(r.Body)
		switch strings.TrimPrefix(r.URL.Path, "/tools/") {
		case "ok":
			var args map[string]any
			json.Unmarshal(body, &args)
			w.Header().Set("Idempotent-Replayed", "true")
			json.NewEncoder(w).Encode(map[string]any{"key": r.Header.Get("Idempotency-Key"), "args": args})
		case "conflict":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(409)
			w.Write([]byte(`{"detail":"in progress"}`))
		case "unprocessable":
			w.WriteHeader(422)
		case "boom":
			w.WriteHeader(503)
		case "hang":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		case "reset":
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		case "big":
			w.Write([]byte(strings.Repeat("x", 2048)))
		case "redirect":
			http.Redirect(w, r, "/tools/ok", http.StatusFound)
		case "text":
			w.Write([]byte("plain words"))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPOutcomes(t *testing.T) {
	var received atomic.Int32
	srv := toolServer(t, &received)
	ep, err := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}", KeyHeader: "Idempotency-Key", MaxResponseBytes: 1024, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	cases := []struct {
		tool     string
		outcome  outcome.Outcome
		status   int
		conflict bool
		errHas   string
	}{
		{"ok", outcome.OK, 200, false, ""},
		{"conflict", outcome.Fail, 409, true, "in progress"},
		{"unprocessable", outcome.Fail, 422, false, "client error 422"},
		{"boom", outcome.Info, 503, false, "server error"},
		{"hang", outcome.Info, 0, false, "timeout"},
		{"reset", outcome.Info, 0, false, ""},
		{"big", outcome.Info, 200, false, "max_response_bytes"},
		{"redirect", outcome.Fail, 302, false, "redirected (302) to http://127.0.0.1"},
		{"text", outcome.OK, 200, false, ""},
	}
	for _, mode := range []string{"call", "prepared"} {
		for _, tc := range cases {
			t.Run(mode+"/"+tc.tool, func(t *testing.T) {
				req := Request{Tool: tc.tool, Args: map[string]any{"a": 1}, Key: "k-1"}
				if tc.tool == "hang" {
					// Only the call that must time out gets a short timeout: the others have
					// all the time a loaded machine needs.
					req.Timeout = 300 * time.Millisecond
				}
				var res Result
				if mode == "call" {
					res = ep.Call(context.Background(), req)
				} else {
					res = Fire(context.Background(), ep.Prepare(context.Background(), req, PrepareOptions{}))
				}
				if res.Outcome != tc.outcome || res.Status != tc.status || res.Conflict != tc.conflict || !strings.Contains(res.Error, tc.errHas) {
					t.Errorf("got %s %d conflict=%v %q; want %s %d conflict=%v error containing %q",
						res.Outcome, res.Status, res.Conflict, res.Error, tc.outcome, tc.status, tc.conflict, tc.errHas)
				}
				if tc.tool == "ok" {
					m, _ := res.Result.(map[string]any)
					if m["key"] != "k-1" || !res.Replayed {
						t.Errorf("result %v replayed=%v; want the key echoed and replayed", res.Result, res.Replayed)
					}
				}
				if tc.tool == "text" && res.Result != "plain words" {
					t.Errorf("non-JSON body: result %#v", res.Result)
				}
			})
		}
	}
}

func TestHTTPRefusedIsFail(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	ep, _ := NewHTTP(HTTPConfig{URL: "http://" + addr + "/tools/{tool}"})
	if res := ep.Call(context.Background(), Request{Tool: "x"}); res.Outcome != outcome.Fail {
		t.Errorf("refused connection: %s %q, want fail", res.Outcome, res.Error)
	}
	if res := Fire(context.Background(), ep.Prepare(context.Background(), Request{Tool: "x"}, PrepareOptions{})); res.Outcome != outcome.Fail {
		t.Errorf("refused prepared connection: %s %q, want fail", res.Outcome, res.Error)
	}
}

func TestHTTPKeyArgAndNoTransportRetry(t *testing.T) {
	var received atomic.Int32
	srv := toolServer(t, &received)
	ep, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}", KeyArg: "idempotencyKey"})
	res := ep.Call(context.Background(), Request{Tool: "ok", Args: map[string]any{"a": 1}, Key: "k-2"})
	args := res.Result.(map[string]any)["args"].(map[string]any)
	if args["idempotencyKey"] != "k-2" {
		t.Errorf("key arg not sent: %v", args)
	}
	// A reset on a reused keep-alive connection must not be re-sent by the transport.
	received.Store(0)
	ep.Call(context.Background(), Request{Tool: "ok", Key: "k-3"})
	ep.Call(context.Background(), Request{Tool: "reset", Key: "k-3"})
	if n := received.Load(); n != 2 {
		t.Errorf("server received %d requests for 2 calls: the transport retried by itself", n)
	}
}

// TestErrorBodies: what a server says about an error reaches the message whatever the body's
// shape and content type, cut to maxDetail bytes (the reporters escape it).
func TestErrorBodies(t *testing.T) {
	long := strings.Repeat("é", 400)
	cases := []struct {
		name, contentType, body string
		status                  int
		want                    string
	}{
		{"plain text", "text/plain", "insufficient funds\n", 400, "client error 400: insufficient funds"},
		{"problem+json", "application/problem+json", `{"type":"about:blank","title":"Bad Request","detail":"amount must be above 0","status":400}`, 400, "client error 400: amount must be above 0"},
		{"nested error object", "application/json", `{"error":{"code":"card_declined","message":"Your card was declined."}}`, 402, "client error 402: Your card was declined. (card_declined)"},
		{"errors list", "application/json", `{"errors":[{"message":"amount is required"},{"message":"currency is invalid"}]}`, 422, "client error 422: amount is required; currency is invalid"},
		{"errors by field", "application/json", `{"errors":{"currency":["is invalid"],"amount":["is required"]}}`, 422, "client error 422: amount: is required; currency: is invalid"},
		{"error string with message", "application/json", `{"error":"invalid_request","message":"key reused with another payload"}`, 422, "client error 422: key reused with another payload"},
		{"only a code", "application/json", `{"code":"rate_limited"}`, 429, "client error 429: rate_limited"},
		{"html", "text/html", "<html><body>Bad Gateway</body></html>", 502, "server error 502: <html><body>Bad Gateway</body></html>"},
		{"empty", "text/plain", "", 400, "client error 400"},
		{"long text is cut", "text/plain", long, 400, "client error 400: " + strings.Repeat("é", maxDetail/2) + "…"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			ep, err := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}", MaxResponseBytes: 1 << 20, Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			res := ep.Call(context.Background(), Request{Tool: "issue_refund", Args: map[string]any{}})
			if res.Error != tc.want {
				t.Errorf("error %q\nwant     %q", res.Error, tc.want)
			}
		})
	}
}
