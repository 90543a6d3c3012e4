package scaffold

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/endpoints"
	"github.com/idemtest/idemtest/internal/scenario"
)

func TestInline(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "api.yaml")
	for _, tc := range []struct {
		name string
		a    scenario.AdHoc
		want map[string]any
	}{
		{"stdio", scenario.AdHoc{MCPCommand: []string{"node", "server.js"}},
			map[string]any{"mcp": map[string]any{"command": []string{"node", "server.js"}}}},
		{"streamable HTTP", scenario.AdHoc{MCPURL: "http://127.0.0.1:3000/mcp"},
			map[string]any{"mcp": map[string]any{"url": "http://127.0.0.1:3000/mcp"}}},
		{"OpenAPI with its server overridden", scenario.AdHoc{OpenAPI: doc, HTTPURL: "http://127.0.0.1:8080"},
			map[string]any{"http": map[string]any{"openapi": doc, "url": "http://127.0.0.1:8080"}}},
		{"plain HTTP", scenario.AdHoc{HTTPURL: "http://127.0.0.1:8080/{tool}", Tools: []string{"issue_refund"}},
			map[string]any{"http": map[string]any{"url": "http://127.0.0.1:8080/{tool}"}, "mutating": []string{"issue_refund"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Inline("adhoc", tc.a); !reflect.DeepEqual(got, map[string]any{"adhoc": tc.want}) {
				t.Errorf("got %#v", got)
			}
		})
	}
}

// TestProjectFiles: a scenario for each mutating tool only, the ad hoc endpoint's config beside
// them, and Existing finds a file already there.
func TestProjectFiles(t *testing.T) {
	dir := t.TempDir()
	p := Project{Dir: dir, Endpoint: scenario.AdHocName, Def: &scenario.Endpoint{Key: scenario.KeySpec{Arg: "idempotencyKey"}},
		AdHoc: scenario.AdHoc{MCPURL: "http://127.0.0.1:3000/mcp"}, Fanout: 2, Trials: 1}
	files, err := p.Files([]endpoints.ToolInfo{
		{Tool: endpoint.Tool{Name: "issue_refund"}, Mutating: true},
		{Tool: endpoint.Tool{Name: "list_refunds"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f.Path))
	}
	if want := []string{"issue_refund.yaml", scenario.ConfigName}; !reflect.DeepEqual(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
	if got := Existing(files); got != "" {
		t.Errorf("Existing = %q before anything was written", got)
	}
	if err := os.WriteFile(files[1].Path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Existing(files); got != files[1].Path {
		t.Errorf("Existing = %q, want %q", got, files[1].Path)
	}
	if _, err := p.Files([]endpoints.ToolInfo{{Tool: endpoint.Tool{Name: "list_refunds"}}}); err == nil {
		t.Error("an endpoint without mutating tools got files")
	}
}
