package endpoint

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/outcome"
)

// TestOperations calls tools whose method, URL and body come per tool (an OpenAPI document), on
// a real server, one by one and as a last-byte fan-out.
func TestOperations(t *testing.T) {
	type seen struct{ method, uri, body, key, ctype string }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.RequestURI, string(b), r.Header.Get("X-Idempotency-Key") + r.Header.Get("Idempotency-Key"), r.Header.Get("Content-Type")})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	h, err := NewHTTP(HTTPConfig{
		KeyHeader: "Idempotency-Key",
		Operations: map[string]HTTPOperation{
			"list": {Method: "GET", Build: func(args map[string]any) (string, any, error) {
				return srv.URL + "/orders?status=" + args["status"].(string), nil, nil
			}},
			"get": {Method: "GET", Build: func(map[string]any) (string, any, error) {
				return "", nil, errors.New("GET /orders/{id} needs the path parameter id in the arguments")
			}},
			"create": {Method: "POST", KeyHeader: "X-Idempotency-Key", Build: func(args map[string]any) (string, any, error) {
				return srv.URL + "/orders", map[string]any{"item": args["item"]}, nil
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ep := &ListedHTTP{HTTP: h, List: []Tool{{Name: "list", ReadOnly: true}, {Name: "create"}}}
	defer ep.Close()
	ctx := context.Background()
	if r := ep.Call(ctx, Request{Tool: "list", Args: map[string]any{"status": "open"}}); r.Outcome != outcome.OK {
		t.Fatalf("list: %+v", r)
	}
	if r := ep.Call(ctx, Request{Tool: "create", Args: map[string]any{"item": "w"}, Key: "k1"}); r.Outcome != outcome.OK {
		t.Fatalf("create: %+v", r)
	}
	if r := ep.Call(ctx, Request{Tool: "get"}); r.Outcome != outcome.Fail || !strings.Contains(r.Error, "needs the path parameter id") {
		t.Errorf("get without its path parameter: %+v", r)
	}
	fo := Fanout(ctx, ep, Request{Tool: "create", Args: map[string]any{"item": "w"}, Key: "k2"}, FanoutOptions{Copies: 2, Sync: dispatch.SyncLastByte})
	for _, r := range fo.Results {
		if r.Outcome != outcome.OK {
			t.Fatalf("fan-out copy: %+v", r)
		}
	}
	want := []seen{
		{"GET", "/orders?status=open", "", "", ""},
		{"POST", "/orders", `{"item":"w"}`, "k1", "application/json"},
		{"POST", "/orders", `{"item":"w"}`, "k2", "application/json"},
		{"POST", "/orders", `{"item":"w"}`, "k2", "application/json"},
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("server saw %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	tools, _ := ep.Tools(ctx)
	if len(tools) != 2 || !tools[0].ReadOnly {
		t.Errorf("tools = %+v", tools)
	}
}
