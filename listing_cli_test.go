//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/endpoint/endpointtest"
)

// endlessListing is a real MCP server (the Go SDK's) whose tools/list answers always carry a
// next cursor: every page lists one mutating tool, "issue_refund" on the first.
func endlessListing(t *testing.T) *httptest.Server {
	t.Helper()
	real := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server {
		s := sdk.NewServer(&sdk.Implementation{Name: "endless", Version: "1"}, nil)
		sdk.AddTool(s, &sdk.Tool{Name: "issue_refund"}, func(context.Context, *sdk.CallToolRequest, map[string]any) (*sdk.CallToolResult, map[string]any, error) {
			return nil, map[string]any{"refundId": "r1"}, nil
		})
		return s
	}, &sdk.StreamableHTTPOptions{JSONResponse: true})
	return endpointtest.PagingMCP(t, real, func(n int) ([]map[string]any, string) {
		name := "issue_refund"
		if n > 0 {
			name = fmt.Sprintf("tool_%d", n)
		}
		return []map[string]any{{"name": name, "inputSchema": map[string]any{"type": "object"}}}, strconv.Itoa(n + 1)
	})
}

// TestEndlessToolListing: tools, run and check end with the listing cap's error, naming the
// server, when the server's tools/list pagination never ends. As for a server that does not
// start, a failing endpoint is a recorded outcome, exit 1 (not 2: the input was valid and
// requests were sent), and run's JSON report says why.
func TestEndlessToolListing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds idemtest")
	}
	srv := endlessListing(t)
	dir := t.TempDir()
	scenario := "name: refund on an endless lister\nendpoints:\n  e:\n    mcp: {url: \"" + srv.URL + "\"}\nsteps:\n  - call_tool: issue_refund\n    args: {amount: 1}\n"
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "list tools of mcp server " + srv.URL + ": stopped at idemtest's listing cap: its tools/list pagination did not end within 1000 pages"
	tests := []struct {
		name string
		args []string
	}{
		{name: "tools", args: []string{"tools", "--mcp-url", srv.URL}},
		{name: "run", args: []string{"run", "--no-color", "--json", "report.json", "s.yaml"}},
		{name: "check", args: []string{"check", "--no-color", "--mcp-url", srv.URL, "--json", "report.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.Remove(filepath.Join(dir, "report.json"))
			// The limit only keeps a command that never ends from hanging the suite.
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			c := exec.CommandContext(ctx, buildIdemtest(t), tt.args...)
			c.Dir = dir
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			err := c.Run()
			if ctx.Err() != nil {
				t.Fatalf("idemtest %s did not end; output:\n%.2000s", tt.name, out.String())
			}
			code := c.ProcessState.ExitCode()
			t.Logf("exit %d (%v)\n%s", code, err, out.String())
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if !strings.Contains(out.String(), want) {
				t.Errorf("the output does not say %q", want)
			}
			if tt.name != "run" {
				// tools writes no report; check, on an endpoint that fails before its
				// battery starts, leaves its --json file empty (as for a server that does
				// not start): the message above is what it says.
				return
			}
			b, err := os.ReadFile(filepath.Join(dir, "report.json"))
			if err != nil {
				t.Fatalf("no JSON report: %v", err)
			}
			var report any
			if err := json.Unmarshal(b, &report); err != nil {
				t.Fatalf("the JSON report does not parse: %v", err)
			}
			if !containsString(report, want) {
				t.Errorf("the JSON report does not say %q:\n%.3000s", want, b)
			}
		})
	}
}

// containsString reports whether a decoded JSON value holds a string containing s.
func containsString(v any, s string) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, s)
	case []any:
		for _, e := range x {
			if containsString(e, s) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if containsString(e, s) {
				return true
			}
		}
	}
	return false
}
