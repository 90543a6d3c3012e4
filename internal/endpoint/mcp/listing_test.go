package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/endpoint/endpointtest"
)

// pagingMCP is a real MCP server whose tools/list answers are written by page (PagingMCP).
func pagingMCP(t *testing.T, page func(n int) ([]map[string]any, string)) *httptest.Server {
	t.Helper()
	real := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return testMCPServer(nil) }, nil)
	return endpointtest.PagingMCP(t, real, page)
}

func pageTool(name, desc string) map[string]any {
	return map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}}
}

// TestListingCaps: a server whose tools/list never ends fails the listing at a cap named in
// the error, with the server; a server that pages properly lists every page.
func TestListingCaps(t *testing.T) {
	endless := func(perPage int, desc string) func(int) ([]map[string]any, string) {
		return func(n int) ([]map[string]any, string) {
			tools := make([]map[string]any, perPage)
			for i := range tools {
				tools[i] = pageTool(fmt.Sprintf("t%d_%d", n, i), desc)
			}
			return tools, fmt.Sprintf("c%d", n+1)
		}
	}
	tests := []struct {
		name    string
		page    func(int) ([]map[string]any, string)
		listing Listing
		cap     string // "" for a listing that ends
		tools   int
	}{
		{name: "three pages", page: func(n int) ([]map[string]any, string) {
			next := fmt.Sprintf("c%d", n+1)
			if n == 2 {
				next = ""
			}
			return []map[string]any{pageTool(fmt.Sprintf("t%d", n), "")}, next
		}, tools: 3},
		// The default caps, as every command has them.
		{name: "endless cursor", page: endless(1, ""), cap: "pages"},
		{name: "endless tools", page: endless(100, ""), listing: Listing{MaxPages: 1 << 20, MaxTools: 500}, cap: "tools"},
		{name: "giant definitions", page: endless(10, strings.Repeat("x", 64<<10)), listing: Listing{MaxPages: 1 << 20, MaxBytes: 1 << 20}, cap: "bytes"},
		{name: "stalled page", listing: Listing{Timeout: 200 * time.Millisecond}, cap: "time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := pagingMCP(t, tt.page)
			ep := New(Config{URL: srv.URL, Listing: tt.listing})
			t.Cleanup(func() { ep.Close() })
			tools, err := ep.Tools(context.Background())
			if tt.cap == "" {
				if err != nil || len(tools) != tt.tools {
					t.Fatalf("listed %d tools, err %v; want %d", len(tools), err, tt.tools)
				}
				return
			}
			var le *ListError
			if !errors.As(err, &le) || le.Cap != tt.cap || le.Server != srv.URL {
				t.Fatalf("err = %v, want the %s cap of %s", err, tt.cap, srv.URL)
			}
			t.Log(err)
		})
	}
}

// TestListingEndsWithCaller: the caller's context still ends a listing, and says so as itself,
// not as a cap.
func TestListingEndsWithCaller(t *testing.T) {
	srv := pagingMCP(t, nil)
	ep := New(Config{URL: srv.URL})
	t.Cleanup(func() { ep.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := ep.connect(ctx); err != nil {
		t.Fatal(err)
	}
	go cancel()
	_, err := ep.Tools(ctx)
	var le *ListError
	if err == nil || errors.As(err, &le) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// manyTools is a server listing n tools over pages of 100, named t0000…, in reverse order.
func manyTools(t *testing.T, n int) *Endpoint {
	srv := pagingMCP(t, func(p int) ([]map[string]any, string) {
		var tools []map[string]any
		for i := p * 100; i < min(n, (p+1)*100); i++ {
			tools = append(tools, pageTool(fmt.Sprintf("t%04d", n-1-i), ""))
		}
		next := fmt.Sprintf("c%d", p+1)
		if (p+1)*100 >= n {
			next = ""
		}
		return tools, next
	})
	ep := New(Config{URL: srv.URL, Listing: Listing{MaxPages: 1000, MaxTools: 10_000}})
	t.Cleanup(func() { ep.Close() })
	return ep
}

// TestToolLookup: Tool finds a listed tool and reports an unknown one as absent, Tools lists
// them sorted, and what a caller does to the list it was given stays its own.
func TestToolLookup(t *testing.T) {
	ep := manyTools(t, 250)
	ctx := context.Background()
	tool, ok, err := ep.Tool(ctx, "t0123")
	if err != nil || !ok || tool.Name != "t0123" {
		t.Fatalf("Tool(t0123) = %v, %v, %v", tool.Name, ok, err)
	}
	if _, ok, err := ep.Tool(ctx, "nope"); err != nil || ok {
		t.Fatalf("Tool(nope) = %v, %v; want absent", ok, err)
	}
	tools, err := ep.Tools(ctx)
	if err != nil || len(tools) != 250 || tools[0].Name != "t0000" || tools[249].Name != "t0249" {
		t.Fatalf("Tools = %d tools, err %v", len(tools), err)
	}
	tools[0].Name = "changed"
	if again, _ := ep.Tools(ctx); again[0].Name != "t0000" {
		t.Fatalf("a caller's change reached the endpoint's list: %q", again[0].Name)
	}
}
