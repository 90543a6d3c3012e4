package rigtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/load"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/stateview"
)

// Config writes yaml as the idemtest.yaml of a fresh directory and loads it as the commands do:
// a test's config goes through the same validation as a user's.
func Config(t testing.TB, yaml string) *scenario.Scenario {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "idemtest.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	base, err := load.Config(t.Context(), dir, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// Target starts what endpoint of base needs (closed when the test ends) and is what a battery
// checks there: the endpoint's tools as idemtest tools lists them, and the state reads of
// check.snapshot, else the read-only tools without required arguments. It leaves out what
// check.Run adds for users (check.key, the names checked against the tools, a sink for uri
// arguments): a test names its tools and arguments itself.
func Target(t testing.TB, base *scenario.Scenario, endpoint string) rig.Target {
	t.Helper()
	def := base.Endpoints[endpoint]
	if def == nil {
		t.Fatalf("no endpoint %q in the config", endpoint)
	}
	cfg := base.Check
	if cfg == nil {
		cfg = &scenario.CheckConfig{MissingKey: "reject", Tools: map[string]*scenario.CheckTool{}}
	}
	ctx := context.Background()
	env, err := runner.StartWith(ctx, []*scenario.Scenario{base}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	tools, err := env.Tools(ctx, base, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	snap := stateview.Snapshots{Tools: stateview.SnapshotTools(tools), Ignore: def.Ignore}
	if len(cfg.Snapshot) > 0 {
		snap.Tools, snap.Args = nil, map[string]map[string]any{}
		for _, sn := range cfg.Snapshot {
			snap.Tools = append(snap.Tools, sn.Tool)
			if m, ok := scenariogen.PlainArgs(sn.Args).(map[string]any); ok {
				snap.Args[sn.Tool] = m
			}
		}
	}
	return rig.Target{Env: env, Base: base, Def: def, Config: cfg, Tools: tools, URL: "http://127.0.0.1:9", Snapshots: snap}
}
