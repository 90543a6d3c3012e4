package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/endpoint/endpointtest"
	"github.com/idemtest/idemtest/internal/outcome"
)

// answers are what a tool answers, by name: a status and a body over HTTP; over MCP, isError
// when the status is not 2xx, and the body as structured content.
var answers = map[string]struct {
	status int
	body   string
}{
	"executed":       {200, `{"refundId":"re_1","status":"succeeded"}`},
	"status-error":   {200, `{"status":"error","message":"Request not found"}`},
	"success-false":  {200, `{"success":false,"reason":"duplicate"}`},
	"ok-false":       {200, `{"ok":false}`},
	"lone-error":     {200, `{"error":"duplicate request","code":"dup"}`},
	"error-beside":   {200, `{"refundId":"re_1","error":"a warning the execution carries"}`},
	"status-failed":  {200, `{"refundId":"re_1","status":"failed"}`},
	"declared":       {200, `{"result":{"code":"DENIED"}}`},
	"shaped-409":     {200, `{"status":"error","code":"idempotency_key_in_progress","message":"retry later"}`},
	"refused-422":    {422, `{"code":"idempotency_key_mismatch"}`},
	"error-null":     {200, `{"error":null,"refundId":"re_1"}`},
	"ok-true-status": {200, `{"ok":true,"status":"done"}`},
}

// TestRefusalsAlikeOverHTTPAndMCP: an error-shaped success is a refusal (outcome fail) whatever
// carries it, an HTTP 200 or an MCP result without isError, as an error status and isError are;
// the endpoint's refusal: adds shapes; an in-progress refusal is a conflict on both transports.
func TestRefusalsAlikeOverHTTPAndMCP(t *testing.T) {
	tests := []struct {
		tool     string
		want     outcome.Outcome
		conflict bool
	}{
		{"executed", outcome.OK, false},
		{"status-error", outcome.Fail, false},
		{"success-false", outcome.Fail, false},
		{"ok-false", outcome.Fail, false},
		{"lone-error", outcome.Fail, false},
		{"error-beside", outcome.OK, false},  // an error beside what an execution made is not lone
		{"status-failed", outcome.OK, false}, // a refund whose status is failed executed: declare it if it is a refusal
		{"declared", outcome.Fail, false},
		{"shaped-409", outcome.Fail, true},
		{"refused-422", outcome.Fail, false},
		{"error-null", outcome.OK, false},
		{"ok-true-status", outcome.OK, false},
	}
	refusals := endpoint.Refusals{Declared: []endpoint.Shape{{"result.code": "DENIED"}}}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /tools/{name}", func(w http.ResponseWriter, r *http.Request) {
		a := answers[r.PathValue("name")]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	plain, err := endpoint.NewHTTP(endpoint.HTTPConfig{URL: hs.URL + "/tools/{tool}", Refusals: refusals})
	if err != nil {
		t.Fatal(err)
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "answers", Version: "1"}, nil)
	for name, a := range answers {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var v any
			_ = json.Unmarshal([]byte(a.body), &v)
			return &sdk.CallToolResult{StructuredContent: v, IsError: a.status >= 400,
				Content: []sdk.Content{&sdk.TextContent{Text: a.body}}}, nil
		})
	}
	overMCP := New(Config{URL: endpointtest.ServeMCP(t, srv), Refusals: refusals})
	t.Cleanup(func() { _ = overMCP.Close() })

	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			for name, ep := range map[string]endpoint.Endpoint{"http": plain, "mcp": overMCP} {
				res := ep.Call(context.Background(), endpoint.Request{Tool: tt.tool, Args: map[string]any{}})
				if res.Outcome != tt.want || res.Conflict != tt.conflict {
					t.Errorf("%s: outcome %s conflict %v (%s), want %s conflict %v", name, res.Outcome, res.Conflict, res.Error, tt.want, tt.conflict)
				}
				if tt.want == outcome.Fail && tt.tool != "refused-422" && !strings.HasPrefix(res.Error, "error-shaped answer") {
					t.Errorf("%s: error %q does not say the answer was error-shaped", name, res.Error)
				}
			}
		})
	}
	// Lost responses are judged by the answer idemtest read: an error-shaped one did not execute.
	for name, ep := range map[string]endpoint.Endpoint{"http": plain, "mcp": overMCP} {
		res := ep.Call(context.Background(), endpoint.Request{Tool: "status-error", Args: map[string]any{}, LoseResponse: true})
		if res.Outcome != outcome.Info || res.Discarded != outcome.Fail {
			t.Errorf("%s: a lost error-shaped answer: outcome %s discarded %s, want info and fail", name, res.Outcome, res.Discarded)
		}
	}
}
