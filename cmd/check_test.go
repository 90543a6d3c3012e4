package cmd

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/check"
	"github.com/idemtest/idemtest/internal/check/battery"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/load"
)

// fakeReport is a fake battery's report: one row per tool, its cells of the given statuses.
func fakeReport(endpoint string, cells map[string][]matrix.Status) *check.Report {
	rep := &check.Report{Endpoint: endpoint, Profile: "ietf", Checks: []string{"concurrent", "replay"}, Start: fakeNow, Duration: time.Second}
	for _, tool := range slices.Sorted(maps.Keys(cells)) {
		row := &check.Row{Tool: tool}
		for i, st := range cells[tool] {
			c := &battery.Cell{Check: rep.Checks[i], Status: st, Reason: "why " + string(st)}
			if st == matrix.Fail {
				c.Details = []string{"key k1 executed 2 times"}
			}
			row.Cells = append(row.Cells, c)
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep
}

// checkJSON is what a consumer reads of check --json.
type checkJSON struct {
	Failed   bool   `json:"failed"`
	Endpoint string `json:"endpoint"`
	Tools    []struct {
		Tool  string `json:"tool"`
		Cells []struct {
			Check  string `json:"check"`
			Status string `json:"status"`
		} `json:"cells"`
	} `json:"tools"`
	Interrupted bool `json:"interrupted"`
}

// refundsConfig is the config the fake loader of check, sweep and tools finds.
func refundsConfig() *scenario.Scenario {
	return &scenario.Scenario{Config: "idemtest.yaml", Endpoints: map[string]*scenario.Endpoint{"refunds": {}, "bookings": {}}}
}

// TestCheckOptions: idemtest check from argv to the endpoint it resolves, the battery's
// options, the matrix reports and the exit code, with the loaders and the battery faked.
func TestCheckOptions(t *testing.T) {
	pass := map[string][]matrix.Status{"issue_refund": {matrix.Pass, matrix.Pass}}
	tests := []struct {
		name   string
		args   []string
		cfgErr error
		// report and err are the battery's outcome (report nil: the battery must not run);
		// cancel cancels the run inside the battery (Ctrl-C).
		report func() *check.Report
		err    error
		cancel bool
		code   ExitCode
		stderr string
		check  func(t *testing.T, cfg load.Options, adhoc []scenario.AdHoc, o check.Options, r ran, dir string)
	}{
		{
			name: "flags reach the battery", report: func() *check.Report { return fakeReport("refunds", pass) }, code: ExitOK,
			args: []string{"check", "--endpoint", "refunds", "--config", "c.yaml", "--only", "concurrent", "--skip-tool", "list_refunds",
				"--profile", "stripe", "--rounds", "5", "--budget", "3s", "--fanout", "4", "--shard", "2/3", "--tool", "issue_refund"},
			check: func(t *testing.T, cfg load.Options, adhoc []scenario.AdHoc, o check.Options, _ ran, _ string) {
				if cfg.Config != "c.yaml" || len(adhoc) != 0 {
					t.Errorf("config %+v, ad hoc %+v", cfg, adhoc)
				}
				if o.Endpoint != "refunds" || !slices.Equal(o.Only, []string{"concurrent"}) || !slices.Equal(o.SkipTools, []string{"list_refunds"}) ||
					!slices.Equal(o.Tools, []string{"issue_refund"}) || o.Profile != "stripe" || o.Rounds != 5 || o.Budget != 3*time.Second ||
					o.Fanout != 4 || o.ShardK != 2 || o.ShardN != 3 {
					t.Errorf("battery got %+v", o)
				}
			},
		},
		{
			name: "an ad hoc endpoint is built from the command line", report: func() *check.Report { return fakeReport(scenario.AdHocName, pass) }, code: ExitOK,
			args: []string{"check", "--mcp-command", "node server.js", "--allow-host", "h.example"},
			check: func(t *testing.T, _ load.Options, adhoc []scenario.AdHoc, o check.Options, _ ran, _ string) {
				if len(adhoc) != 1 || !slices.Equal(adhoc[0].MCPCommand, []string{"node", "server.js"}) || !slices.Equal(adhoc[0].AllowHosts, []string{"h.example"}) {
					t.Errorf("ad hoc %+v", adhoc)
				}
				if o.Endpoint != scenario.AdHocName || o.Profile != "ietf" || o.Fanout != 8 || o.Budget != 2*time.Second || o.ShardN != 0 {
					t.Errorf("battery got %+v, want the defaults", o)
				}
			},
		},
		{
			name: "a pass writes --json and --junit where asked", report: func() *check.Report { return fakeReport("refunds", pass) }, code: ExitOK,
			args: []string{"check", "--endpoint", "refunds", "--json", "{dir}/c.json", "--junit", "{dir}/c.xml"},
			check: func(t *testing.T, _ load.Options, _ []scenario.AdHoc, _ check.Options, _ ran, dir string) {
				rep := readReport[checkJSON](t, "check", filepath.Join(dir, "c.json"))
				if rep.Failed || rep.Endpoint != "refunds" || len(rep.Tools) != 1 || rep.Tools[0].Cells[0].Status != "pass" {
					t.Errorf("report %+v", rep)
				}
				if _, err := os.Stat(filepath.Join(dir, "c.xml")); err != nil {
					t.Error(err)
				}
			},
		},
		{
			name: "a ✗ exits 1 and the JSON on stdout says so", code: ExitFailed,
			report: func() *check.Report {
				return fakeReport("refunds", map[string][]matrix.Status{"issue_refund": {matrix.Fail, matrix.Pass}, "cancel": {matrix.Pass, matrix.Warn}})
			},
			args: []string{"check", "--endpoint", "refunds", "--json", "-"},
			check: func(t *testing.T, _ load.Options, _ []scenario.AdHoc, _ check.Options, r ran, _ string) {
				rep := decodeReport[checkJSON](t, "check", []byte(r.out))
				if !rep.Failed || len(rep.Tools) != 2 || rep.Tools[1].Tool != "issue_refund" || rep.Tools[1].Cells[0].Status != "fail" {
					t.Errorf("report %+v", rep)
				}
			},
		},
		{
			name: "--coverage lists a tool every check skipped, and passes", code: ExitOK,
			report: func() *check.Report {
				return fakeReport("refunds", map[string][]matrix.Status{"issue_refund": {matrix.Pass, matrix.Pass}, "cancel": {matrix.Skip, matrix.Skip}})
			},
			args: []string{"check", "--endpoint", "refunds", "--coverage", "--json", "{dir}/c.json"},
			check: func(t *testing.T, _ load.Options, _ []scenario.AdHoc, _ check.Options, _ ran, dir string) {
				type coverageJSON struct {
					Coverage []struct {
						Endpoint  string `json:"endpoint"`
						Uncovered []struct {
							Tool, Reason string
						} `json:"uncovered"`
					} `json:"coverage"`
				}
				rep := readReport[coverageJSON](t, "check", filepath.Join(dir, "c.json"))
				if len(rep.Coverage) != 1 || len(rep.Coverage[0].Uncovered) != 1 || rep.Coverage[0].Uncovered[0].Tool != "cancel" ||
					rep.Coverage[0].Uncovered[0].Reason != "concurrent skipped: why skip" {
					t.Errorf("coverage %+v", rep.Coverage)
				}
			},
		},
		{
			name: "every check skipped exits 1", code: ExitFailed, stderr: "no tool could be judged",
			report: func() *check.Report {
				return fakeReport("refunds", map[string][]matrix.Status{"issue_refund": {matrix.Skip, matrix.Skip}})
			},
			args: []string{"check", "--endpoint", "refunds"},
		},
		{
			name: "interrupted exits 130 with the report", code: ExitInterrupted, cancel: true,
			report: func() *check.Report {
				rep := fakeReport("refunds", pass)
				rep.Interrupted = true
				return rep
			},
			args: []string{"check", "--endpoint", "refunds", "--json", "{dir}/c.json"},
			check: func(t *testing.T, _ load.Options, _ []scenario.AdHoc, _ check.Options, _ ran, dir string) {
				if rep := readReport[checkJSON](t, "check", filepath.Join(dir, "c.json")); !rep.Interrupted {
					t.Errorf("report %+v, want interrupted", rep)
				}
			},
		},
		{
			name: "interrupted before a row exits 130", code: ExitInterrupted, cancel: true, err: context.Canceled,
			report: func() *check.Report { return nil },
			args:   []string{"check", "--endpoint", "refunds"},
		},
		{
			name: "a battery that could not start exits 1", code: ExitFailed, err: os.ErrPermission, stderr: "idemtest: permission denied",
			report: func() *check.Report { return nil },
			args:   []string{"check", "--endpoint", "refunds"},
		},
		{
			name: "a check: section that does not fit the endpoint is exit 2", code: ExitUsage,
			err: &check.ConfigError{Msg: "check.snapshot: no tool get_refund"}, stderr: "check.snapshot: no tool get_refund",
			report: func() *check.Report { return nil },
			args:   []string{"check", "--endpoint", "refunds"},
		},
		{
			name: "a config with a typo is exit 2 at file:line:col", code: ExitUsage, cfgErr: loadErrors,
			stderr: `refund.yaml:3:5: unknown key "asert"`, args: []string{"check", "--endpoint", "refunds"},
		},
		{name: "a report path that is a directory is exit 2, nothing run", args: []string{"check", "--endpoint", "refunds", "--junit", "{dir}"}, code: ExitUsage, stderr: ": is a directory"},
		{name: "an endpoint the config lacks", args: []string{"check", "--endpoint", "nope"}, code: ExitUsage, stderr: `no endpoint "nope" (idemtest.yaml defines: bookings, refunds)`},
		{name: "--endpoint and an ad hoc endpoint", args: []string{"check", "--endpoint", "refunds", "--mcp-url", "http://127.0.0.1:1/mcp"}, code: ExitUsage, stderr: "give --endpoint or an ad hoc endpoint, not both"},
		{name: "--profile unknown", args: []string{"check", "--endpoint", "refunds", "--profile", "aws"}, code: ExitUsage, stderr: `--profile "aws": use ietf, stripe, lenient`},
		{name: "--only unknown", args: []string{"check", "--endpoint", "refunds", "--only", "concurent"}, code: ExitUsage, stderr: `unknown check "concurent"`},
		{name: "--fanout 1", args: []string{"check", "--endpoint", "refunds", "--fanout", "1"}, code: ExitUsage, stderr: "--fanout must be from 2 to"},
		{name: "--budget 0", args: []string{"check", "--endpoint", "refunds", "--budget", "0s"}, code: ExitUsage, stderr: "--budget must be above zero"},
		{name: "--shard 3/2", args: []string{"check", "--endpoint", "refunds", "--shard", "3/2"}, code: ExitUsage, stderr: "--shard: "},
		{name: "a stray argument", args: []string{"check", "refunds"}, code: ExitUsage, stderr: `unknown command "refunds"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var cfg load.Options
			var adhoc []scenario.AdHoc
			battery := &calls[check.Options]{}
			seams := forbidden(t)
			seams.LoadConfig = func(_ context.Context, dir string, o load.Options) (*scenario.Scenario, error) {
				if dir != "." {
					t.Errorf("config looked for from %q, want .", dir)
				}
				cfg = o
				if tc.cfgErr != nil {
					return nil, tc.cfgErr
				}
				return refundsConfig(), nil
			}
			seams.AdHocEndpoint = func(_ context.Context, a scenario.AdHoc) (*scenario.Scenario, error) {
				adhoc = append(adhoc, a)
				return &scenario.Scenario{Endpoints: map[string]*scenario.Endpoint{scenario.AdHocName: {}}}, nil
			}
			seams.RunCheck = func(_ context.Context, _ *scenario.Scenario, o check.Options) (*check.Report, error) {
				battery.add(o)
				if tc.report == nil {
					t.Error("the battery ran")
					return nil, nil
				}
				if tc.cancel {
					cancel()
				}
				return tc.report(), tc.err
			}
			r := execute(ctx, seams, withDir(tc.args, dir)...)
			r.wantExit(t, tc.code, tc.stderr)
			if tc.check != nil {
				tc.check(t, cfg, adhoc, battery.one(t, "the battery"), r, dir)
			}
		})
	}
}
