package scaffold

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/toolset"
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

// TestProjectFiles: a scenario for each mutating tool only, and the ad hoc endpoint's config
// beside them under its fixed name.
func TestProjectFiles(t *testing.T) {
	dir := t.TempDir()
	p := Project{Dir: dir, Endpoint: scenario.AdHocName, Def: &scenario.Endpoint{Key: scenario.KeySpec{Arg: "idempotencyKey"}},
		AdHoc: scenario.AdHoc{MCPURL: "http://127.0.0.1:3000/mcp"}, Fanout: 2, Trials: 1}
	files, err := p.Files([]toolset.ToolInfo{
		{Tool: endpoint.Tool{Name: "issue_refund"}, Mutating: true},
		{Tool: endpoint.Tool{Name: "list_refunds"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name+f.Ext)
	}
	if want := []string{"issue_refund.yaml", scenario.ConfigName}; !reflect.DeepEqual(names, want) || !files[1].Fixed {
		t.Errorf("files %v, want %v, the config fixed", names, want)
	}
	if _, err := p.Files([]toolset.ToolInfo{{Tool: endpoint.Tool{Name: "list_refunds"}}}); err == nil {
		t.Error("an endpoint without mutating tools got files")
	}
}
