package check

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/check/battery"
	"github.com/idemtest/idemtest/internal/endpoint/endpointtest"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/scenario"
)

// shopServer is a real MCP server whose tools each show one way the answers alone mislead:
//
//   - create_item deduplicates by name, as the npm memory server does: a retry answers
//     {"created": []}, which looks like a second execution, but the state holds one item;
//   - add_note appends on every call and always answers the same, so a burst looks replayed;
//   - dedupe refuses a payload it has seen, whatever the key;
//   - once works the first time only (as move_file with fixed arguments), so its refusals
//     say nothing about keys; keyed refuses only calls without a key;
//   - broken never works; peek is annotated readOnlyHint yet appends a note; look is
//     annotated readOnlyHint and changes nothing.
//
// list_items is the state: the items and the notes.
func shopServer(t *testing.T) string {
	var mu sync.Mutex
	items, notes := []string{}, []string{}
	onceUsed := false
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1.0.0"}, nil)
	argsOf := func(req *mcp.CallToolRequest) map[string]any {
		var a map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &a)
		return a
	}
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"idempotencyKey":{"type":"string"}},"required":["name"]}`)
	srv.AddTool(&mcp.Tool{Name: "create_item", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name, _ := argsOf(req)["name"].(string)
		mu.Lock()
		defer mu.Unlock()
		if slices.Contains(items, name) {
			return answer(map[string]any{"created": []any{}}), nil
		}
		items = append(items, name)
		return answer(map[string]any{"created": []any{name}}), nil
	})
	srv.AddTool(&mcp.Tool{Name: "add_note", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name, _ := argsOf(req)["name"].(string)
		mu.Lock()
		notes = append(notes, name)
		mu.Unlock()
		return answer(map[string]any{"saved": true}), nil
	})
	srv.AddTool(&mcp.Tool{Name: "once", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		if onceUsed {
			return nil, errors.New("source is gone")
		}
		onceUsed = true
		return answer(map[string]any{"moved": true}), nil
	})
	srv.AddTool(&mcp.Tool{Name: "keyed", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, ok := argsOf(req)["idempotencyKey"]; !ok {
			return nil, errors.New("idempotencyKey is required")
		}
		return answer(map[string]any{"ok": true}), nil
	})
	seen := map[string]bool{}
	srv.AddTool(&mcp.Tool{Name: "dedupe", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name, _ := argsOf(req)["name"].(string)
		mu.Lock()
		defer mu.Unlock()
		if seen[name] {
			return nil, errors.New("duplicate request")
		}
		seen[name] = true
		return answer(map[string]any{"id": len(seen)}), nil
	})
	srv.AddTool(&mcp.Tool{Name: "broken", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("no such account")
	})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	srv.AddTool(&mcp.Tool{Name: "peek", InputSchema: schema, Annotations: readOnly}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		notes = append(notes, "peeked")
		mu.Unlock()
		return answer(map[string]any{"seen": true}), nil
	})
	srv.AddTool(&mcp.Tool{Name: "look", InputSchema: schema, Annotations: readOnly}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return answer(map[string]any{"seen": true}), nil
	})
	srv.AddTool(&mcp.Tool{Name: "list_items", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			return answer(map[string]any{"items": toAny(items), "notes": toAny(notes)}), nil
		})
	return endpointtest.ServeMCP(t, srv)
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// runShop runs the battery on a fresh shop server; mutating, when set, names the tools checked
// as mutating whatever their annotations say. once gets fixed arguments, as a user would give
// move_file.
func runShop(t *testing.T, opts Options, mutating []string) (map[string]*battery.Cell, map[string]string) {
	t.Helper()
	base, err := scenario.AdHocScenario(context.Background(), scenario.AdHoc{MCPURL: shopServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	if mutating != nil {
		base.Endpoints[scenario.AdHocName].Mutating = mutating
	}
	base.Check = &scenario.CheckConfig{MissingKey: "reject", Tools: map[string]*scenario.CheckTool{
		"once": {Name: "once", Args: map[string]any{"name": "report.txt"}},
	}}
	opts.Endpoint = scenario.AdHocName
	opts.Rounds = 20
	rep, err := Run(context.Background(), base, opts)
	if err != nil {
		t.Fatal(err)
	}
	cells, skipped := map[string]*battery.Cell{}, map[string]string{}
	for _, row := range rep.Rows {
		skipped[row.Tool] = row.Skipped
		for _, c := range row.Cells {
			cells[row.Tool+" "+c.Check] = c
		}
	}
	return cells, skipped
}

func TestStateOverrulesAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: race budget: the whole battery, concurrent and in-flight budgets included, on six tools")
	}
	cells, skipped := runShop(t, Options{Tools: []string{"create_item", "add_note", "once", "keyed", "broken", "dedupe"}}, nil)
	if !strings.Contains(skipped["broken"], "a plain call with these arguments fails (json-rpc error 0: no such account)") {
		t.Errorf("broken skipped = %q", skipped["broken"])
	}
	tests := []struct {
		cell     string
		status   matrix.Status
		evidence string
		reason   string
	}{
		// Deduplicated by content: the retry answers differently, the state shows one item.
		{"create_item replay", matrix.Warn, "state (list_items), answers", "executed twice, same state: the retry answered as a second execution, not with the first call's answer, but left list_items as the first call left it: idempotent by nature, or the server deduplicates by content (safe); keys are not honoured"},
		{"create_item lost-response", matrix.Warn, "state (list_items), answers", "deduplicates by content"},
		// Its keys do nothing: what two keys do is not judged.
		{"create_item distinct-keys", matrix.Skip, "", "⚠ executed twice, same state); judged only where keys work"},
		{"create_item concurrent", matrix.Warn, "state (list_items), answers", "the state changed as one call changes it in every round"},
		// Answers that look like replays, a state that grew once per copy.
		{"add_note concurrent", matrix.Fail, "state (list_items)", "one burst changed len(list_items.notes) by +8, as 8 calls do (one call: +1)"},
		{"add_note replay", matrix.Fail, "state (list_items)", "the retry changed the state again"},
		// Refused with and without a key alike: not evidence about keys.
		{"once missing-key", matrix.Inconclusive, "status code", "so is a call with a fresh key (json-rpc error 0: source is gone): the refusal is not about the key"},
		{"once replay", matrix.Inconclusive, "", "the same arguments worked in the plain call before the battery"},
		{"keyed missing-key", matrix.Pass, "status code", "a call without a key: rejected"},
		// Refused for its payload while other arguments work: the control keeps the ✗.
		{"dedupe distinct-keys", matrix.Fail, "answers (exactly-once verdict)", "a new key with the same arguments was refused (json-rpc error 0: duplicate request): the server dedupes on the payload"},
	}
	for _, tt := range tests {
		t.Run(tt.cell, func(t *testing.T) {
			c := cells[tt.cell]
			if c == nil {
				t.Fatalf("no cell %q", tt.cell)
			}
			if c.Status != tt.status || c.EvidenceText != tt.evidence || !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("got %s [%s] %q, want %s [%s] %q", c.Status, c.EvidenceText, c.Reason, tt.status, tt.evidence, tt.reason)
			}
		})
	}
}

func TestReadOnlyHintChangesNothing(t *testing.T) {
	cells, _ := runShop(t, Options{Only: []string{battery.Annotations}}, []string{"peek", "look"})
	for _, tt := range []struct {
		cell   string
		status matrix.Status
		reason string
	}{
		{"peek annotations", matrix.Fail, "annotated readOnlyHint, yet one call changed list_items"},
		{"look annotations", matrix.Pass, "annotated readOnlyHint, and a call left list_items as it was"},
	} {
		c := cells[tt.cell]
		if c == nil || c.Status != tt.status || !strings.Contains(c.Reason, tt.reason) {
			t.Errorf("%s: got %+v, want %s %q", tt.cell, c, tt.status, tt.reason)
		}
	}
}
