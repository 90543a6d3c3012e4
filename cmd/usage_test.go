package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/iostreams"
)

// TestUsageNits: bad usage exits 2 with a message that says what to do instead.
func TestUsageNits(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code ExitCode
		out  string
	}{
		{"--trials 0 is refused", []string{"run", "--trials", "0", "x"}, ExitUsage, "--trials must be from 1 to"},
		{"--trials -1 is refused", []string{"run", "--trials=-1", "x"}, ExitUsage, "--trials must be from 1 to"},
		{"completion tcsh", []string{"completion", "tcsh"}, ExitUsage, `unknown shell "tcsh": idemtest completes bash, zsh, fish, powershell`},
		{"--retries means --trials", []string{"run", "--retries", "3", "x"}, ExitUsage, "unknown flag: --retries\n\nDid you mean this?\n\t--trials"},
		{"a typo", []string{"run", "--paralel", "3", "x"}, ExitUsage, "Did you mean this?\n\t--parallel"},
		{"a prefix", []string{"validate", "--allow", "h", "x"}, ExitUsage, "Did you mean this?\n\t--allow-host"},
		{"nothing close", []string{"run", "--zzzzzzzz", "x"}, ExitUsage, "unknown flag: --zzzzzzzz\nRun 'idemtest --help'"},
		{"two reports on stdout", []string{"run", "--json", "-", "--html", "-", "../examples/scenarios/burst.yaml"}, ExitUsage, "--json and --html: only one report can go to standard output (-)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			io, out, errOut := iostreams.Test()
			code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, tc.args)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			if !strings.Contains(out.String()+errOut.String(), tc.out) {
				t.Errorf("output lacks %q:\n%s%s", tc.out, out, errOut)
			}
		})
	}
}

func TestValidateCountsInWords(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"one", []string{"a.yaml"}, "ok: 1 scenario, 1 step in 1 file\n"},
		{"two", []string{"a.yaml", "b.yaml"}, "ok: 2 scenarios, 2 steps in 2 files\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				sc := "name: " + f + "\nendpoint: e\nendpoints: {e: {http: {url: \"http://127.0.0.1:1/{tool}\"}}}\nsteps:\n  - call_tool: t\n"
				if err := os.WriteFile(filepath.Join(dir, f), []byte(sc), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			io, out, errOut := iostreams.Test()
			if code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, []string{"validate", dir}); code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if out.String() != tc.want {
				t.Errorf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}
