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

// droppingWork is how long the pay tool of droppingServer works before it executes.
const droppingWork = 500 * time.Millisecond

// droppingServer is a real MCP server whose pay tool checks the key, works for a while, then
// executes and stores (naive: a retry that comes while a call works executes too), except that
// a call whose client gave up before the work was done never executes. No retry after a client
// timeout ever meets a call in flight, so nothing tells whether the server would have executed
// it twice.
//
// The client's notifications/cancelled may reach the server before the call it cancels (each is
// a request of its own over streamable HTTP), and then it cancels nothing. So the server also
// drops a call when another call with its key arrives while it works: that is the retry, or the
// other payload, that the client sends after giving up. The dropped call answers what the later
// one executes (its client no longer listens). A busy machine may deliver the call given up on
// after the one sent next: it then drops the call that is waited for and itself never executes,
// so the call it dropped executes after all. Either way, exactly the calls the client still
// waits for execute, however late a busy machine delivers anything within the work's 500ms.
func droppingServer(t *testing.T) string {
	var mu sync.Mutex
	keys := map[string]*mcp.CallToolResult{}
	// flying is the latest call of each key still working.
	type flight struct {
		done chan struct{}
		res  *mcp.CallToolResult
	}
	flying := map[string]*flight{}
	var ledger []any
	srv := mcp.NewServer(&mcp.Implementation{Name: "dropping", Version: "1.0.0"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"},"idempotencyKey":{"type":"string"}},"required":["amount"]}`)
	srv.AddTool(&mcp.Tool{Name: "pay", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &args)
		key, _ := args["idempotencyKey"].(string)
		mu.Lock()
		stored := keys[key]
		f := &flight{done: make(chan struct{})}
		if stored == nil {
			flying[key] = f
		}
		mu.Unlock()
		if stored != nil {
			replay := *stored
			replay.Meta = mcp.Meta{"idempotentReplayed": true}
			return &replay, nil
		}
		defer close(f.done)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(droppingWork):
		}
		mu.Lock()
		if latest := flying[key]; latest == nil && keys[key] != nil {
			// Dropped, and the later call with this key has executed and finished already:
			// this one gets its answer.
			f.res = keys[key]
			mu.Unlock()
			return f.res, nil
		} else if latest != nil && latest != f {
			// Dropped: a later call with this key came while this one worked.
			mu.Unlock()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-latest.done:
			}
			if latest.res != nil {
				f.res = latest.res
				return f.res, nil
			}
			// The later call never executed: it was the call given up on, overtaken on its
			// way by the one sent after it (this one), and its client left. This call's
			// client still waits, so it executes.
			mu.Lock()
		}
		defer mu.Unlock()
		delete(flying, key)
		entry := map[string]any{"id": fmt.Sprintf("pay_%d", len(ledger)+1), "amount": args["amount"]}
		ledger = append(ledger, entry)
		f.res = answer(entry)
		keys[key] = f.res
		return f.res, nil
	})
	srv.AddTool(&mcp.Tool{Name: "list_ledger", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			out := map[string]any{"entries": append([]any{}, ledger...)}
			return answer(out), nil
		})
	return endpointtest.ServeMCP(t, srv)
}

// TestInFlightNeedsTheCallInFlight: when the call given up on never runs, the retry, or the other
// payload, meets nothing in flight, and the state showing one execution proves nothing about a
// server that executes what comes while a call works. The cell is ?, after three trials, never ✓.
func TestInFlightNeedsTheCallInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: race budget: in-flight checks spend their 2s budget against a server slowed to 500ms a call")
	}
	base, err := scenario.AdHocScenario(context.Background(), scenario.AdHoc{MCPURL: droppingServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	base.Check = &scenario.CheckConfig{Tools: map[string]*scenario.CheckTool{}}
	rep, err := Run(context.Background(), base, Options{Endpoint: scenario.AdHocName, Only: []string{battery.Replay, battery.TimeoutRetry, battery.MismatchInFlight}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		status matrix.Status
		reason []string
	}{
		battery.Replay:           {matrix.Pass, []string{"the retry left list_ledger as the first call left it and got the stored answer"}},
		battery.TimeoutRetry:     {matrix.Inconclusive, []string{"the retry's answer is not marked as a replay and list_ledger changed as one call does: nothing shows that the call given up on was in flight at the server", "none with the first call in flight)"}},
		battery.MismatchInFlight: {matrix.Inconclusive, []string{"the second payload may have reached the server first", "none with the first call in flight)"}},
	}
	seen := 0
	for _, row := range rep.Rows {
		if row.Tool != "pay" {
			continue
		}
		for _, c := range row.Cells {
			seen++
			w := want[c.Check]
			ok := c.Status == w.status
			for _, r := range w.reason {
				ok = ok && strings.Contains(c.Reason, r)
			}
			if !ok {
				t.Errorf("pay %s: got %s %q, want %s with %q\n%s", c.Check, c.Status, c.Reason, w.status, w.reason, strings.Join(c.Details, "\n"))
			}
		}
	}
	if seen != len(want) {
		t.Errorf("pay has %d cells, want %d", seen, len(want))
	}
}
