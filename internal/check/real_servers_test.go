package check

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/check/battery"
	"github.com/idemtest/idemtest/internal/check/rig/rigtest"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/scenario"
)

// glue is how glueServer behaves, each mode one seen around a real idempotency library.
type glue struct {
	// acceptMissing executes a pay call without its accountId (for an anonymous account) instead
	// of refusing it; cacheErrors stores a refused call's error under its key.
	acceptMissing, cacheErrors bool
	// conflictForever answers 409 to every call with a key that already completed.
	conflictForever bool
	// ignoreKeys executes every call and answers it with an error-shaped success.
	ignoreKeys bool
	// replayExecutes executes a retry of a completed key again and marks its answer as a replay.
	replayExecutes bool
}

// glueServer is a real MCP server (streamable HTTP at /mcp) with a keyed pay tool and a
// read-only list_payments, plus plain HTTP: POST /tools/pay (key in Idempotency-Key) and
// GET /payments?accountId= (what a probe reads). With ignoreKeys it also has approve and cancel,
// which ignore keys and answer every call with an error-shaped success.
func glueServer(t *testing.T, g glue) string {
	var mu sync.Mutex
	keys := map[string]map[string]any{}
	refused := map[string]bool{}
	var payments []map[string]any
	seen := map[string]bool{}
	pay := func(key string, args map[string]any) (status int, body map[string]any, replayed bool) {
		mu.Lock()
		defer mu.Unlock()
		replayed = g.replayExecutes && seen[key]
		seen[key] = true
		if stored, ok := keys[key]; ok && key != "" && !g.replayExecutes {
			if g.conflictForever {
				return 409, map[string]any{"error": "a request with this key is in progress"}, false
			}
			return 200, stored, false
		}
		if refused[key] {
			return 400, map[string]any{"error": "accountId is required"}, false
		}
		acct, _ := args["accountId"].(string)
		if acct == "" && !g.acceptMissing {
			if g.cacheErrors {
				refused[key] = true
			}
			return 400, map[string]any{"error": "accountId is required"}, false
		}
		if acct == "" {
			acct = "anonymous"
		}
		p := map[string]any{"paymentId": fmt.Sprintf("pay_%d", len(payments)+1), "accountId": acct, "amount": args["amount"]}
		payments = append(payments, p)
		if key != "" {
			keys[key] = p
		}
		return 200, p, replayed
	}
	list := func(acct string) []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		out := []map[string]any{}
		for _, p := range payments {
			if acct == "" || p["accountId"] == acct {
				out = append(out, p)
			}
		}
		return out
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "glue", Version: "1.0.0"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"accountId":{"type":"string"},"amount":{"type":"number"},"idempotencyKey":{"type":"string"}},"required":["accountId","amount"]}`)
	if g.ignoreKeys {
		for _, name := range []string{"approve", "cancel"} {
			srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object","properties":{"requestId":{"type":"string"}},"required":["requestId"]}`)},
				func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					mu.Lock()
					payments = append(payments, map[string]any{"tool": name})
					mu.Unlock()
					return answer(map[string]any{"status": "error", "message": "Request not found"}), nil
				})
		}
	}
	{
		srv.AddTool(&mcp.Tool{Name: "pay", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			key, _ := args["idempotencyKey"].(string)
			status, body, replayed := pay(key, args)
			res := answer(body)
			if replayed {
				res.Meta = mcp.Meta{"idempotentReplayed": true}
			}
			if status != 200 {
				res.IsError = true
			}
			return res, nil
		})
	}
	srv.AddTool(&mcp.Tool{Name: "list_payments", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return answer(map[string]any{"payments": list("")}), nil
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	mux.HandleFunc("POST /tools/pay", func(w http.ResponseWriter, r *http.Request) {
		var args map[string]any
		_ = json.NewDecoder(r.Body).Decode(&args)
		status, body, replayed := pay(r.Header.Get("Idempotency-Key"), args)
		w.Header().Set("Content-Type", "application/json")
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	})
	mux.HandleFunc("GET /payments", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"payments": list(r.URL.Query().Get("accountId"))})
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL
}

// glueConfig loads an idemtest.yaml for glueServer at url: endpoint mcp over /mcp, endpoint plain
// over POST /tools/pay, a probe of this session's payments and pay's declared effects over it,
// filtered by the accountId the README tells users to filter by.
func glueConfig(t *testing.T, url string) *scenario.Scenario {
	return rigtest.Config(t, fmt.Sprintf(`endpoints:
  mcp:
    mcp: {url: "%[1]s/mcp"}
  plain:
    http: {url: "%[1]s/tools/{tool}"}
    mutating: [pay]
probes:
  paid: {http: {url: "%[1]s/payments?accountId=acct_{{ session }}"}}
check:
  tools:
    pay:
      args: {accountId: "acct_{{ session }}", amount: 5}
      effects: len(paid.payments)
`, url))
}

// TestNoFalseAlarmOnRealServers: each row is a behaviour seen around a real library, with the
// cell check must give (never a ✗ that blames what it did not see), next to the broken server
// whose ✗ must still appear.
func TestNoFalseAlarmOnRealServers(t *testing.T) {
	tests := []struct {
		name     string
		server   glue
		endpoint string
		profile  string
		cell     string // tool check
		status   matrix.Status
		reason   string
	}{
		// The broken call leaves out accountId, which the effects filter by: the server accepts
		// it, the effects cannot see it, and no call was refused, so nothing is judged.
		{"accepted broken call is no evidence", glue{acceptMissing: true}, "mcp", "", "pay errors-not-replayed", matrix.Inconclusive, "succeeded, so there was no refused call to retry"},
		{"a stored error is still caught", glue{cacheErrors: true}, "mcp", "", "pay errors-not-replayed", matrix.Fail, "the error was stored under the key"},
		{"correct server", glue{}, "mcp", "", "pay errors-not-replayed", matrix.Pass, "the corrected call with the same key executed"},
		// Keys ignored, error-shaped answers: both tools ran, nothing shows keys shared. The
		// error-shaped answer is a refusal (DESIGN §8), but the state shows the call executed:
		// the stronger evidence wins and the message says both, so no retry is judged.
		{"keys that do nothing are not blamed for scope", glue{ignoreKeys: true}, "mcp", "", "approve key-scope", matrix.Skip, "a plain call failed (error-shaped answer: Request not found), yet it changed list_payments"},
		// A retry after completion refused for ever: the agent never learns the outcome.
		{"409 for ever is ✗ under ietf", glue{conflictForever: true}, "plain", "ietf", "pay replay", matrix.Fail, "every retry after the first call completed was refused (status 409"},
		{"409 for ever is ✗ under stripe", glue{conflictForever: true}, "plain", "stripe", "pay lost-response", matrix.Fail, "the agent can never learn the outcome"},
		{"409 for ever is ⚠ under lenient", glue{conflictForever: true}, "plain", "lenient", "pay replay", matrix.Warn, "✗ under the ietf and stripe profiles"},
		{"a replay is ✓", glue{}, "plain", "ietf", "pay replay", matrix.Pass, "the retry got the stored answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := glueConfig(t, glueServer(t, tt.server))
			check := strings.Fields(tt.cell)[1]
			opts := Options{Endpoint: tt.endpoint, Profile: tt.profile, Only: []string{check}}
			if tt.server.ignoreKeys {
				opts.SkipTools = []string{"pay"} // approve borrows cancel's answers, as on the real server
			}
			rep, err := Run(context.Background(), base, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range rep.Diagnoses {
				if strings.Contains(d, "effects is not used") {
					t.Fatalf("the declared effects were left out: %s", d)
				}
			}
			var c *battery.Cell
			for _, row := range rep.Rows {
				for _, x := range row.Cells {
					if row.Tool+" "+x.Check == tt.cell {
						c = x
					}
				}
			}
			if c == nil {
				t.Fatalf("no cell %q", tt.cell)
			}
			if c.Status != tt.status || !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("got %s %q [%s], want %s with %q\n%s", c.Status, c.Reason, c.EvidenceText, tt.status, tt.reason, strings.Join(c.Details, "\n"))
			}
			if tt.status != matrix.Fail && rep.Failed() {
				t.Errorf("the report failed")
			}
		})
	}
}

// TestDiagnosisNeverHidesCountedExecutions: a server that executes a retry again and marks its
// answer as a replay has differing replays and two executions the effects count. The diagnosis
// says so, and never sends the user to leave the differing field out with compare.ignore.
func TestDiagnosisNeverHidesCountedExecutions(t *testing.T) {
	base := glueConfig(t, glueServer(t, glue{replayExecutes: true}))
	rep, err := Run(context.Background(), base, Options{Endpoint: "plain", Only: []string{"replay"}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Failed() {
		t.Fatalf("a server that executes every retry passed")
	}
	want := "answers marked as replays differ from the stored answer, and effects counted more than one execution (pay replay)"
	found := false
	for _, d := range rep.Diagnoses {
		if strings.Contains(d, "compare: {ignore") {
			t.Errorf("the diagnosis hides counted executions: %s", d)
		}
		found = found || strings.HasPrefix(d, want)
	}
	if !found {
		t.Errorf("diagnoses %q, want one starting %q", rep.Diagnoses, want)
	}
}
