package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	scenarioload "github.com/idemtest/idemtest/internal/scenario/load"
)

// TestMCPStderrPerScenario: two scenarios running at once each define a stdio MCP endpoint
// named srv, with servers of their own; each failure shows the standard error of its own
// server. (Each server waits until the other has started, so both endpoints exist before
// either scenario fails.)
func TestMCPStderrPerScenario(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "empty.yaml")
	os.WriteFile(cfg, []byte("{}\n"), 0o644)
	var paths []string
	for _, who := range []string{"a", "b"} {
		other := map[string]string{"a": "b", "b": "a"}[who]
		script := fmt.Sprintf(`touch %[1]s/%[2]s; while [ ! -e %[1]s/%[3]s ]; do sleep 0.01; done; echo "server of scenario %[2]s" >&2; exit 1`, dir, who, other)
		yaml := fmt.Sprintf(`name: scenario %s
endpoints:
  srv:
    mcp: {command: [sh, -c, %q]}
endpoint: srv
steps:
  - call_tool: anything
`, who, script)
		path := filepath.Join(dir, who+".yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	list, err := scenarioload.Scenarios(context.Background(), paths, scenarioload.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	rep := Run(context.Background(), list, Options{Parallel: 2})
	for _, res := range rep.Scenarios {
		who := strings.TrimPrefix(res.Scenario.Name, "scenario ")
		if res.Failure == nil {
			t.Fatalf("%s passed", res.Scenario.Name)
		}
		got := res.Failure.ServiceOutput["mcp srv"]
		if got != "server of scenario "+who {
			t.Errorf("%s: its MCP server's stderr reads %q", res.Scenario.Name, got)
		}
	}
}
