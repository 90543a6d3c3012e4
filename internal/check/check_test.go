package check

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/check/battery"
	"github.com/idemtest/idemtest/internal/endpoint/endpointtest"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/scenario"
)

// notesServer is a real MCP server whose answers lie: add_note is annotated idempotentHint and
// charge accepts a key, yet both append a note on every call and answer the same constant, so
// the answers look like replays. Only list_notes, the state, shows the second execution.
func notesServer(t *testing.T) string {
	var mu sync.Mutex
	var notes []string
	reqs := 0
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, nil)
	appendNote := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &args)
		mu.Lock()
		notes = append(notes, args["text"].(string))
		mu.Unlock()
		return &mcp.CallToolResult{StructuredContent: map[string]any{"saved": true}, Content: []mcp.Content{&mcp.TextContent{Text: `{"saved":true}`}}}, nil
	}
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"idempotencyKey":{"type":"string"}},"required":["text"]}`)
	srv.AddTool(&mcp.Tool{Name: "add_note", InputSchema: schema, Annotations: &mcp.ToolAnnotations{IdempotentHint: true}}, appendNote)
	srv.AddTool(&mcp.Tool{Name: "charge", InputSchema: schema}, appendNote)
	// stamp keeps its keys but mints a new requestId on every answer, replays included.
	stamped := map[string]bool{}
	srv.AddTool(&mcp.Tool{Name: "stamp", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &args)
		key, _ := args["idempotencyKey"].(string)
		mu.Lock()
		seen := stamped[key]
		stamped[key] = true
		reqs++
		body := map[string]any{"text": args["text"], "requestId": fmt.Sprint("req_", reqs)}
		mu.Unlock()
		res := &mcp.CallToolResult{StructuredContent: body, Content: []mcp.Content{&mcp.TextContent{Text: "stamped"}}}
		if seen {
			res.Meta = mcp.Meta{"idempotentReplayed": true}
		}
		return res, nil
	})
	srv.AddTool(&mcp.Tool{Name: "list_notes", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			return answer(map[string]any{"notes": append([]string(nil), notes...)}), nil
		})
	return endpointtest.ServeMCP(t, srv)
}

func TestStateCatchesWhatAnswersHide(t *testing.T) {
	base, err := scenario.AdHocScenario(context.Background(), scenario.AdHoc{MCPURL: notesServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), base, Options{Endpoint: scenario.AdHocName, Only: []string{battery.Replay, battery.LostResponse, battery.Annotations}})
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]*battery.Cell{}
	for _, row := range rep.Rows {
		for _, c := range row.Cells {
			cells[row.Tool+" "+c.Check] = c
		}
	}
	tests := []struct {
		cell     string
		status   matrix.Status
		evidence string
		reason   string
	}{
		{"charge replay", matrix.Fail, "state (list_notes)", "the retry changed the state again: list_notes"},
		{"charge lost-response", matrix.Fail, "state (list_notes)", "the retry changed the state again"},
		{"charge annotations", matrix.Skip, "", "no idempotentHint to check"},
		{"add_note replay", matrix.Fail, "state (list_notes)", "the retry changed the state again"},
		{"stamp replay", matrix.Fail, "answers (exactly-once verdict)", "a replay differs from the stored answer"},
		{"add_note annotations", matrix.Fail, "state (list_notes)", "annotated idempotentHint, yet the same call again changed list_notes again"},
	}
	for _, tt := range tests {
		t.Run(tt.cell, func(t *testing.T) {
			c := cells[tt.cell]
			if c == nil {
				t.Fatalf("no cell %q in %v", tt.cell, cells)
			}
			if c.Status != tt.status || c.EvidenceText != tt.evidence || !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("got %s [%s] %q, want %s [%s] %q", c.Status, c.EvidenceText, c.Reason, tt.status, tt.evidence, tt.reason)
			}
		})
	}
	if _, ok := cells["list_notes replay"]; ok {
		t.Error("the read-only list_notes was checked as a mutating tool")
	}
	if len(rep.Diagnoses) != 1 || !strings.Contains(rep.Diagnoses[0], "leave it out with compare: {ignore: [PATH]}") {
		t.Errorf("diagnoses = %q", rep.Diagnoses)
	}
	if !rep.Failed() {
		t.Error("report not failed")
	}
}

// answer is a tool result that carries v as structured content and as its JSON text, as the
// MCP spec asks of a tool with structured output.
func answer(v map[string]any) *mcp.CallToolResult {
	b, _ := json.Marshal(v)
	return &mcp.CallToolResult{StructuredContent: v, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}
