package cmd

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolsEscapesHostileNames lists and scaffolds the tools of a real MCP server whose tool
// names carry terminal escapes, an RTL override and a forged workflow command: none of it
// reaches the output raw, and the files init writes have plain names.
func TestToolsEscapesHostileNames(t *testing.T) {
	hostile := "refund\x1b]0;pwned\x07\u202eevil\n::error file=x.yaml,line=1::forged"
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: hostile, InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()

	dir := t.TempDir()
	for _, args := range [][]string{
		{"tools", "--mcp-url", ts.URL},
		{"tools", "--json", "--mcp-url", ts.URL},
		{"init", "--mcp-url", ts.URL, "--dir", dir},
	} {
		io, out, errOut := Test()
		if code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, args); code != ExitOK {
			t.Fatalf("%s: exit %d\n%s%s", args[0], code, out, errOut)
		}
		got := out.String() + errOut.String()
		if strings.ContainsAny(got, "\x1b\x07\u202e") || strings.Contains(got, "\n::") {
			t.Errorf("%s printed server bytes raw:\n%q", args[0], got)
		}
		if !strings.Contains(got, `refund\x1b]0;pwned\x07\u202eevil`) && !strings.Contains(got, "refund__0_pwned_") &&
			!strings.Contains(got, `refund\u001b]0;pwned\u0007\u202eevil`) {
			t.Errorf("%s does not show the tool:\n%s", args[0], got)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		if name := filepath.Base(f); strings.ContainsAny(name, "\x1b\x07\u202e\n") {
			t.Errorf("init wrote %q", name)
		}
	}
	if len(files) != 2 { // the scenario, and idemtest.yaml for the endpoint given on the command line
		t.Errorf("init wrote %d files", len(files))
	}
}
