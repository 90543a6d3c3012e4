package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/endpoint/endpointtest"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/reportschema/schemacheck"
)

// TestJSONFlagUsage: --json takes a FILE or - on every command; what cannot be meant is bad
// usage (exit 2) that says what to write, before anything is sent.
func TestJSONFlagUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"tools bare --json", []string{"tools", "--mcp-url", "http://127.0.0.1:1/mcp", "--json"}, "--json takes a FILE, or - for standard output (--json -)"},
		{"tools --json before a flag", []string{"tools", "--json", "--mcp-url", "http://127.0.0.1:1/mcp"}, "--json --mcp-url: a report path cannot start with \"-\": write --json - for standard output"},
		{"check --json before a flag", []string{"check", "--json", "--mcp-url", "http://127.0.0.1:1/mcp"}, "--json --mcp-url: a report path cannot start with \"-\": write --json - for standard output"},
		{"sweep --json before a flag", []string{"sweep", "t.jsonl", "--json", "--endpoint", "x"}, "--json --endpoint: a report path cannot start with"},
		{"run --json before a flag", []string{"run", "--json", "--trials", "2", "."}, "--json --trials: a report path cannot start with"},
		{"check two reports on stdout", []string{"check", "--json", "-", "--junit", "-", "--mcp-url", "http://127.0.0.1:1/mcp"}, "only one report can go to standard output"},
		{"proxy stdio --json -", []string{"proxy", "--json", "-", "--", "true"}, "standard output is the agent's MCP stream"},
		{"proxy stdio --junit -", []string{"proxy", "--junit", "-", "--", "true"}, "give --junit/--json a file (--json verdict.json); - is for the HTTP modes"},
		{"schema unknown report", []string{"schema", "--report", "junit"}, `unknown report kind "junit": use one of run, check, sweep, proxy, tools, trace, audit`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			io, out, errOut := iostreams.Test()
			if code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, tc.args); code != ExitUsage {
				t.Fatalf("exit %d, want %d\n%s%s", code, ExitUsage, out, errOut)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr %q does not say %q", errOut, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
}

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
	url := endpointtest.ServeMCP(t, srv)

	dir := t.TempDir()
	for _, args := range [][]string{
		{"tools", "--mcp-url", url},
		{"tools", "--json", "-", "--mcp-url", url},
		{"init", "--mcp-url", url, "--dir", dir},
	} {
		io, out, errOut := iostreams.Test()
		if code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, args); code != ExitOK {
			t.Fatalf("%s: exit %d\n%s%s", args[0], code, out, errOut)
		}
		if args[1] == "--json" {
			// Standard output is the JSON alone (the table went to stderr), and it is valid.
			if err := schemacheck.Validate("tools", out.Bytes()); err != nil {
				t.Errorf("tools --json -: %v\n%s", err, out)
			}
			var list []struct{ Name string }
			if err := json.Unmarshal(out.Bytes(), &list); err != nil || len(list) != 1 || list[0].Name != hostile {
				t.Errorf("tools --json - decodes to %+v (%v), want the name whole", list, err)
			}
		}
		got := out.String() + errOut.String()
		if strings.ContainsAny(got, "\x1b\x07\u202e") || strings.Contains(got, "\n::") {
			t.Errorf("%s printed server bytes raw:\n%q", args[0], got)
		}
		if !strings.Contains(got, `refund\x1b]0;pwned\x07`) && !strings.Contains(got, "refund__0_pwned_") &&
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

// TestToolsClipsLongNames: a server with one 300-character tool name still gets a table whose
// columns fit a terminal; --json keeps the name whole.
func TestToolsClipsLongNames(t *testing.T) {
	long := "refund_" + strings.Repeat("x", 286) + "_create"
	srv := mcp.NewServer(&mcp.Implementation{Name: "long", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object"}`)
	for _, name := range []string{long, "issue_refund"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	url := endpointtest.ServeMCP(t, srv)

	io, out, errOut := iostreams.Test()
	if code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, []string{"tools", "--mcp-url", url}); code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	// Every column starts where it would without the long name.
	header, _, _ := strings.Cut(out.String(), "\n")
	if col := strings.Index(header, "READ-ONLY"); col > reporters.NameWidth+2 {
		t.Errorf("the second column starts at %d:\n%s", col, out)
	}
	if !strings.Contains(out.String(), "refund_xxxxxxxxxxxxxxx") || !strings.Contains(out.String(), "…xxxxxx_create") {
		t.Errorf("the long name is not shown clipped:\n%s", out)
	}

	io, out, errOut = iostreams.Test()
	if code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, []string{"tools", "--json", "-", "--mcp-url", url}); code != ExitOK {
		t.Fatalf("--json: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out.String(), `"`+long+`"`) {
		t.Errorf("--json does not hold the whole name:\n%s", out)
	}
}

// TestUnknownEndpointNamesTheConfigsInOrder: an --endpoint the config does not define is
// refused with the endpoints it does define, sorted, whatever the map order.
func TestUnknownEndpointNamesTheConfigsInOrder(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "idemtest.yaml")
	var yaml strings.Builder
	yaml.WriteString("endpoints:\n")
	for _, name := range []string{"delta", "alpha", "echo", "charlie", "bravo"} {
		yaml.WriteString("  " + name + ": {http: {url: \"http://127.0.0.1:1/{tool}\"}}\n")
	}
	if err := os.WriteFile(cfg, []byte(yaml.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		io, _, errOut := iostreams.Test()
		if code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, []string{"tools", "--config", cfg, "--endpoint", "nope"}); code != ExitUsage {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
		if want := "defines: alpha, bravo, charlie, delta, echo)"; !strings.Contains(errOut.String(), want) {
			t.Fatalf("got %q, want it to say %q", errOut, want)
		}
	}
}
