package check

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/check/battery"
	"github.com/idemtest/idemtest/internal/endpoint/endpointtest"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/scenario"
)

// keyFaults are the ways keyServer keeps its keys wrong.
type keyFaults struct {
	// shared keeps one key space for every tool: the same key on another tool replays the
	// first tool's answer.
	shared bool
	// cacheErrors stores a refused call's error under its key, so the corrected call gets it
	// again.
	cacheErrors bool
	// ttl forgets a key after this long (0: never).
	ttl time.Duration
}

// keyServer is a real MCP server with two keyed tools, pay and ship, and a read-only
// list_ledger: correct with no faults, broken in exactly the ways asked for.
func keyServer(t *testing.T, f keyFaults) string {
	var mu sync.Mutex
	type stored struct {
		res *mcp.CallToolResult
		at  time.Time
	}
	keys := map[string]stored{}
	var ledger []any
	seq := 0
	keyed := func(tool string, required string) mcp.ToolHandler {
		return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			key, _ := args["idempotencyKey"].(string)
			scoped := tool + ":" + key
			if f.shared {
				scoped = key
			}
			mu.Lock()
			defer mu.Unlock()
			if s, ok := keys[scoped]; ok && key != "" && (f.ttl == 0 || time.Since(s.at) < f.ttl) {
				replay := *s.res
				replay.Meta = mcp.Meta{"idempotentReplayed": true}
				return &replay, nil
			}
			var res *mcp.CallToolResult
			if _, ok := args[required]; !ok {
				res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: required + " is required"}}}
				if !f.cacheErrors {
					return res, nil
				}
			} else {
				seq++
				entry := map[string]any{"id": fmt.Sprintf("%s_%d", tool, seq), "tool": tool, required: args[required]}
				ledger = append(ledger, entry)
				res = answer(entry)
			}
			if key != "" {
				keys[scoped] = stored{res, time.Now()}
			}
			return res, nil
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "keys", Version: "1.0.0"}, nil)
	schema := func(field, typ string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%q:{"type":%q},"idempotencyKey":{"type":"string"}},"required":[%[1]q]}`, field, typ))
	}
	srv.AddTool(&mcp.Tool{Name: "pay", InputSchema: schema("amount", "number")}, keyed("pay", "amount"))
	srv.AddTool(&mcp.Tool{Name: "ship", InputSchema: schema("address", "string")}, keyed("ship", "address"))
	srv.AddTool(&mcp.Tool{Name: "list_ledger", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			out := map[string]any{"entries": append([]any{}, ledger...)}
			return answer(out), nil
		})
	return endpointtest.ServeMCP(t, srv)
}

// TestKeyChecks runs key-scope, errors-not-replayed and expiry against a correct server and
// against servers broken in exactly the way each check is about: each goes red only there.
func TestKeyChecks(t *testing.T) {
	tests := []struct {
		name   string
		faults keyFaults
		// want is the status of each check on pay, by check id.
		want   map[string]matrix.Status
		reason map[string]string
	}{
		{name: "correct", want: map[string]matrix.Status{battery.Replay: matrix.Pass, battery.KeyScope: matrix.Pass, battery.ErrorsNotReplayed: matrix.Pass, battery.Expiry: matrix.Pass}},
		{name: "keys shared between tools", faults: keyFaults{shared: true},
			want:   map[string]matrix.Status{battery.Replay: matrix.Pass, battery.KeyScope: matrix.Fail, battery.ErrorsNotReplayed: matrix.Pass, battery.Expiry: matrix.Pass},
			reason: map[string]string{battery.KeyScope: "ship with the key of the pay call got pay's answer: keys are not scoped per tool"}},
		{name: "errors stored under the key", faults: keyFaults{cacheErrors: true},
			want:   map[string]matrix.Status{battery.Replay: matrix.Pass, battery.KeyScope: matrix.Pass, battery.ErrorsNotReplayed: matrix.Fail, battery.Expiry: matrix.Pass},
			reason: map[string]string{battery.ErrorsNotReplayed: "the corrected call got the refused call's error again"}},
		{name: "keys forgotten too soon", faults: keyFaults{ttl: 150 * time.Millisecond},
			want:   map[string]matrix.Status{battery.Replay: matrix.Pass, battery.KeyScope: matrix.Pass, battery.ErrorsNotReplayed: matrix.Pass, battery.Expiry: matrix.Fail},
			reason: map[string]string{battery.Expiry: "after 200ms the key was not remembered"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, err := scenario.AdHocScenario(context.Background(), scenario.AdHoc{MCPURL: keyServer(t, tt.faults)})
			if err != nil {
				t.Fatal(err)
			}
			base.Check = &scenario.CheckConfig{MissingKey: "reject", KeyTTL: 200 * time.Millisecond, Tools: map[string]*scenario.CheckTool{}}
			rep, err := Run(context.Background(), base, Options{Endpoint: scenario.AdHocName, Only: []string{battery.Replay, battery.KeyScope, battery.ErrorsNotReplayed, battery.Expiry}})
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for _, row := range rep.Rows {
				if row.Tool != "pay" {
					continue
				}
				seen = len(row.Cells)
				for _, c := range row.Cells {
					if c.Status != tt.want[c.Check] || !strings.Contains(c.Reason, tt.reason[c.Check]) {
						t.Errorf("pay %s: got %s %q, want %s %q\n%s", c.Check, c.Status, c.Reason, tt.want[c.Check], tt.reason[c.Check], strings.Join(c.Details, "\n"))
					}
				}
			}
			if seen != len(tt.want) {
				t.Errorf("pay has %d cells, want %d", seen, len(tt.want))
			}
		})
	}
}
