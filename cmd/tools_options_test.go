package cmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/load"
	"github.com/idemtest/idemtest/internal/toolset"
)

// refundTools is what the fake lister lists.
var refundTools = []toolset.ToolInfo{
	{Tool: endpoint.Tool{Name: "issue_refund"}, KeyCarrier: "arg idempotencyKey", AcceptsKey: "yes", Mutating: true},
	{Tool: endpoint.Tool{Name: "get_refund", ReadOnly: true}, KeyCarrier: "arg idempotencyKey"},
}

// toolsJSON is what a consumer reads of tools --json.
type toolsJSON []struct {
	Name     string `json:"name"`
	Mutating bool   `json:"mutating"`
}

// TestToolsOptions: idemtest tools and init from argv to the endpoint they resolve, the tools
// they list, what they write and the exit code, with the loaders and the lister faked.
func TestToolsOptions(t *testing.T) {
	type seen struct {
		cfg      load.Options
		adhoc    []scenario.AdHoc
		endpoint string
	}
	tests := []struct {
		name     string
		args     []string
		adhocErr error
		// listErr is the lister's error; cancel cancels the command inside it (Ctrl-C).
		listErr error
		cancel  bool
		code    ExitCode
		stderr  string
		check   func(t *testing.T, s seen, r ran, dir string)
	}{
		{
			name: "tools --endpoint lists the config's endpoint", code: ExitOK,
			args: []string{"tools", "--endpoint", "refunds", "--config", "c.yaml"},
			check: func(t *testing.T, s seen, r ran, _ string) {
				if s.cfg.Config != "c.yaml" || s.endpoint != "refunds" || len(s.adhoc) != 0 {
					t.Errorf("config %+v, listed %q, ad hoc %+v", s.cfg, s.endpoint, s.adhoc)
				}
				lines := strings.Split(strings.TrimSpace(r.out), "\n")
				if len(lines) != 3 || !strings.HasPrefix(lines[1], "issue_refund ") || !strings.HasPrefix(lines[2], "get_refund ") {
					t.Errorf("table:\n%s", r.out)
				}
			},
		},
		{
			name: "tools --json - is the list alone on stdout", code: ExitOK,
			args: []string{"tools", "--mcp-url", "http://127.0.0.1:1/mcp", "--json", "-"},
			check: func(t *testing.T, s seen, r ran, _ string) {
				if len(s.adhoc) != 1 || s.adhoc[0].MCPURL != "http://127.0.0.1:1/mcp" || s.endpoint != scenario.AdHocName {
					t.Errorf("ad hoc %+v, listed %q", s.adhoc, s.endpoint)
				}
				list := decodeReport[toolsJSON](t, "tools", []byte(r.out))
				if len(list) != 2 || list[0].Name != "issue_refund" || !list[0].Mutating || list[1].Mutating {
					t.Errorf("list %+v", list)
				}
				if !strings.Contains(r.errOut, "issue_refund") {
					t.Errorf("the table is not on stderr:\n%s", r.errOut)
				}
			},
		},
		{
			name: "tools --json FILE", code: ExitOK,
			args: []string{"tools", "--endpoint", "refunds", "--json", "{dir}/t.json"},
			check: func(t *testing.T, _ seen, _ ran, dir string) {
				if list := readReport[toolsJSON](t, "tools", filepath.Join(dir, "t.json")); len(list) != 2 {
					t.Errorf("list %+v", list)
				}
			},
		},
		{name: "a server that cannot be listed exits 1", args: []string{"tools", "--endpoint", "refunds"}, listErr: errors.New("initialize: connection refused"), code: ExitFailed, stderr: "idemtest: initialize: connection refused"},
		{name: "interrupted while listing exits 130", args: []string{"tools", "--endpoint", "refunds"}, listErr: context.Canceled, cancel: true, code: ExitInterrupted},
		{name: "an ad hoc endpoint that is bad input is exit 2", args: []string{"tools", "--http-url", "http://127.0.0.1:1/x"}, adhocErr: errors.New("--http-url needs {tool}"), code: ExitUsage, stderr: "--http-url needs {tool}"},
		{name: "tools with a stray argument", args: []string{"tools", "refunds"}, code: ExitUsage, stderr: `unknown command "refunds"`},
		{name: "init --fanout 1", args: []string{"init", "--endpoint", "refunds", "--fanout", "1"}, code: ExitUsage, stderr: "--fanout must be from 2 to"},
		{name: "init --trials 0", args: []string{"init", "--endpoint", "refunds", "--trials", "0"}, code: ExitUsage, stderr: "--trials must be from 1 to"},
		{
			name: "init of a server that cannot be listed exits 1, writing nothing", listErr: errors.New("server exited"), code: ExitFailed, stderr: "server exited",
			args: []string{"init", "--endpoint", "refunds", "--dir", "{dir}/scenarios"},
			check: func(t *testing.T, _ seen, _ ran, dir string) {
				if _, err := os.Stat(filepath.Join(dir, "scenarios")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("init wrote: %v", err)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var s seen
			seams := forbidden(t)
			seams.LoadConfig = func(_ context.Context, _ string, o load.Options) (*scenario.Scenario, error) {
				s.cfg = o
				return refundsConfig(), nil
			}
			seams.AdHocEndpoint = func(_ context.Context, a scenario.AdHoc) (*scenario.Scenario, error) {
				s.adhoc = append(s.adhoc, a)
				if tc.adhocErr != nil {
					return nil, tc.adhocErr
				}
				return &scenario.Scenario{Endpoints: map[string]*scenario.Endpoint{scenario.AdHocName: {}}}, nil
			}
			seams.ListTools = func(_ context.Context, _ *scenario.Scenario, endpoint string) ([]toolset.ToolInfo, error) {
				s.endpoint = endpoint
				if tc.cancel {
					cancel()
				}
				if tc.listErr != nil {
					return nil, tc.listErr
				}
				return slices.Clone(refundTools), nil
			}
			r := execute(ctx, seams, withDir(tc.args, dir)...)
			r.wantExit(t, tc.code, tc.stderr)
			if tc.check != nil {
				tc.check(t, s, r, dir)
			}
		})
	}
}

// TestValidateOptions: idemtest validate from argv to the loader and the exit code, with the
// loader faked; it never runs anything (the runner is forbidden).
func TestValidateOptions(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		loadErr error
		cancel  bool
		code    ExitCode
		stdout  string
		stderr  string
		paths   []string
		cfg     load.Options
	}{
		{name: "paths and flags reach the loader", args: []string{"validate", "--config", "c.yaml", "--allow-host", "h.example", "a.yaml", "dir"},
			code: ExitOK, stdout: "ok: 3 scenarios, 1 step in 2 files\n", paths: []string{"a.yaml", "dir"}, cfg: load.Options{Config: "c.yaml", AllowHosts: []string{"h.example"}}},
		{name: "no path is the current directory", args: []string{"validate"}, code: ExitOK, stdout: "ok: 3 scenarios, 1 step in 2 files\n", paths: []string{"."}},
		{name: "a load error is exit 2 at file:line:col", args: []string{"validate", "refund.yaml"}, loadErr: loadErrors, code: ExitUsage,
			stderr: "refund.yaml:3:5: unknown key \"asert\"", paths: []string{"refund.yaml"}},
		{name: "interrupted while loading exits 130", args: []string{"validate"}, loadErr: context.Canceled, cancel: true, code: ExitInterrupted, paths: []string{"."}},
		{name: "an unknown flag", args: []string{"validate", "--trials", "2"}, code: ExitUsage, stderr: "unknown flag: --trials"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var paths []string
			var cfg load.Options
			seams := forbidden(t)
			seams.LoadScenarios = func(_ context.Context, p []string, o load.Options) ([]*scenario.Scenario, error) {
				paths, cfg = p, o
				if tc.cancel {
					cancel()
				}
				if tc.loadErr != nil {
					return nil, tc.loadErr
				}
				// Three scenarios in two files, one with a step.
				list := append(twoScenarios(), &scenario.Scenario{Name: "refund twice", File: "refund.yaml", Steps: []*scenario.Step{{}}})
				return list, nil
			}
			r := execute(ctx, seams, tc.args...)
			r.wantExit(t, tc.code, tc.stderr)
			if r.out != tc.stdout {
				t.Errorf("stdout %q, want %q", r.out, tc.stdout)
			}
			if !slices.Equal(paths, tc.paths) || cfg.Config != tc.cfg.Config || !slices.Equal(cfg.AllowHosts, tc.cfg.AllowHosts) {
				t.Errorf("loader got %q, %+v; want %q, %+v", paths, cfg, tc.paths, tc.cfg)
			}
		})
	}
}
