package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/endpoint/mcp"
	"github.com/idemtest/idemtest/internal/scenario"
)

// countingLister is a real endpoint that counts how often its whole tool list is asked for.
type countingLister struct {
	endpoint.Endpoint
	lister endpoint.ToolLister
	lists  atomic.Int64
}

func (c *countingLister) Tools(ctx context.Context) ([]endpoint.Tool, error) {
	c.lists.Add(1)
	return c.lister.Tools(ctx)
}

func (c *countingLister) Tool(ctx context.Context, name string) (endpoint.Tool, bool, error) {
	return c.lister.Tool(ctx, name)
}

// TestToolLookedUpNotListed: deciding whether a call is mutating and whether its verdict is
// exempt looks the one tool up; it never copies the whole list, which on a server with 2,000
// tools made every call copy and sort the list twice (check took over a minute). The count of
// whole-list requests does not depend on the machine's pace.
func TestToolLookedUpNotListed(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "many", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object"}`)
	for i := range 2000 {
		srv.AddTool(&sdk.Tool{Name: fmt.Sprintf("t%04d", i), InputSchema: schema, Annotations: &sdk.ToolAnnotations{IdempotentHint: i%2 == 0}},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{}, nil
			})
	}
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	ep := mcp.New(mcp.Config{URL: hs.URL})
	t.Cleanup(func() { ep.Close() })
	c := &countingLister{Endpoint: ep, lister: ep}
	r := &runner{}
	def := &scenario.Endpoint{Name: "many"}
	ctx := context.Background()
	for i := range 200 {
		name := fmt.Sprintf("t%04d", i)
		mut, err := r.mutating(ctx, c, def, name)
		if err != nil || !mut {
			t.Fatalf("mutating(%s) = %v, %v", name, mut, err)
		}
		want := ""
		if i%2 == 0 {
			want = "hint"
		}
		if got := r.exemption(ctx, c, def, &scenario.Step{Tool: name}); (got != "") != (want != "") {
			t.Fatalf("exemption(%s) = %q", name, got)
		}
	}
	if n := c.lists.Load(); n != 0 {
		t.Errorf("400 look-ups asked for the whole list of 2,000 tools %d times, want 0", n)
	}
	// An unknown tool is an error naming the tools: the one time the list is needed.
	if _, err := r.mutating(ctx, c, def, "nope"); err == nil || c.lists.Load() != 1 {
		t.Errorf("unknown tool: err %.80v, %d lists", err, c.lists.Load())
	}
}
