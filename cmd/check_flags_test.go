package cmd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemtest/idemtest/internal/check/battery"
)

// TestCheckFlagsSendNothing: idemtest check from argv with the real loaders and the real
// battery against a real HTTP tool server that counts what reaches it. A command line that
// cannot mean anything exits 2 with what is wrong, and not one request reaches the server: a
// usage error is found before any mutating call is sent. The first row, a command line that
// works, shows that the count sees the battery's calls.
func TestCheckFlagsSendNothing(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"pay_1"}`))
	}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/tools/{tool}"
	every := strings.Join(battery.IDs, ",")
	tests := []struct {
		name string
		args []string
		code ExitCode
		// stderr is what the command says; sent is whether requests reach the server.
		stderr string
		sent   bool
	}{
		{name: "a command line that works sends the battery's calls", args: []string{"--only", "missing-key"},
			code: ExitFailed, stderr: "", sent: true},
		{name: "--profile unknown", args: []string{"--profile", "strict"},
			code: ExitUsage, stderr: `--profile "strict": use ietf, stripe, lenient`},
		{name: "--only names no check", args: []string{"--only", "replay,replays"},
			code: ExitUsage, stderr: `unknown check "replays"; checks: ` + strings.Join(battery.IDs, ", ")},
		{name: "--skip names no check", args: []string{"--skip", "concurent"},
			code: ExitUsage, stderr: `unknown check "concurent"`},
		{name: "--only and --skip of the same check", args: []string{"--only", "replay", "--skip", "replay"},
			code: ExitUsage, stderr: "--only and --skip leave no check to run"},
		{name: "--skip of every check", args: []string{"--skip", every},
			code: ExitUsage, stderr: "--only and --skip leave no check to run"},
		{name: "--endpoint with --http-url", args: []string{"--endpoint", "refunds"},
			code: ExitUsage, stderr: "give --endpoint or an ad hoc endpoint, not both"},
		{name: "--mcp-url with --http-url", args: []string{"--mcp-url", srv.URL + "/mcp"},
			code: ExitUsage, stderr: "give exactly one of --endpoint, --mcp-command, --mcp-url, --http-url or --openapi"},
		{name: "--rounds negative", args: []string{"--rounds", "-1"},
			code: ExitUsage, stderr: "--rounds must not be negative"},
		{name: "--budget 0", args: []string{"--budget", "0s"},
			code: ExitUsage, stderr: "--budget must be above zero"},
		{name: "--fanout above the most", args: []string{"--fanout", "1001"},
			code: ExitUsage, stderr: "--fanout must be from 2 to 1000"},
		{name: "--shard out of range", args: []string{"--shard", "0/2"},
			code: ExitUsage, stderr: "--shard: "},
		{name: "--json and --junit both on stdout", args: []string{"--json", "-", "--junit", "-"},
			code: ExitUsage, stderr: "only one report can go to standard output"},
		{name: "--write into a file", args: []string{"--write", "{dir}/idemtest.yaml"},
			code: ExitUsage, stderr: "idemtest.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "idemtest.yaml")
			if err := os.WriteFile(cfg, []byte("check:\n  tools:\n    pay: {args: {amount: 5}}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			requests.Store(0)
			args := append([]string{"check", "--no-color", "--config", cfg, "--http-url", url, "--tool", "pay"}, withDir(tt.args, dir)...)
			r := execute(context.Background(), Seams{}, args...)
			r.wantExit(t, tt.code, tt.stderr)
			if n := requests.Load(); (n > 0) != tt.sent {
				t.Errorf("%d requests reached the server, want any: %v\nstdout:\n%s", n, tt.sent, r.out)
			}
		})
	}
}
