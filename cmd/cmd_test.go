package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/iostreams"
)

func TestRunFlags(t *testing.T) {
	io, _, _ := iostreams.Test()
	var got *RunOptions
	f := &Factory{IO: io, Version: "test"}
	root := NewCmdRoot(f)
	root.RemoveCommand(root.Commands()...)
	root.AddCommand(NewCmdRun(f, func(_ context.Context, o *RunOptions) error { got = o; return nil }))
	root.SetArgs([]string{"run", "-j", "3", "--trials", "7", "--tag", "a,b", "--run", "x", "--session", "s1",
		"--fail-fast", "-v", "--junit", "j.xml", "--json", "j.json", "--allow-host", "h", "dir1", "dir2"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Parallel != 3 || got.Trials != 7 || strings.Join(got.Tags, "|") != "a|b" || got.Run != "x" || got.Session != "s1" ||
		!got.FailFast || !got.Verbose || got.JUnit != "j.xml" || got.JSON != "j.json" || got.AllowHosts[0] != "h" ||
		strings.Join(got.Paths, ",") != "dir1,dir2" {
		t.Errorf("options %+v", got)
	}
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code ExitCode
		out  string
	}{
		{"version", []string{"version"}, ExitOK, "idemtest test"},
		{"unknown command", []string{"frobnicate"}, ExitUsage, "unknown command"},
		{"unknown flag", []string{"run", "--nope"}, ExitUsage, "unknown flag"},
		{"bad regex", []string{"run", "--run", "(", "x"}, ExitUsage, "--run"},
		{"missing path", []string{"validate", "does-not-exist"}, ExitUsage, "does-not-exist: no such file"},
		{"--version", []string{"--version"}, ExitOK, "idemtest test"},
		{"-v alone is not the version", []string{"-v"}, ExitUsage, "idemtest: -v is --verbose, for a command that has it (idemtest run -v); for the version: idemtest --version"},
		{"-v with only flags", []string{"--no-color", "-v"}, ExitUsage, "for the version: idemtest --version"},
		{"-v before a command without -v", []string{"-v", "validate", "x"}, ExitUsage, "-v is --verbose, and validate has none; for the version: idemtest --version, for every call of a run: idemtest run -v"},
		{"-v before report, whose merge has it", []string{"-v", "report", "merge"}, ExitUsage, "requires at least 1 arg"},
		{"-v after a command without -v", []string{"validate", "-v", "x"}, ExitUsage, "unknown shorthand flag: 'v' in -v"},
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

// TestVerboseBeforeCommand: -v before a command that has -v means the same as after it.
func TestVerboseBeforeCommand(t *testing.T) {
	io, _, _ := iostreams.Test()
	root := NewCmdRoot(&Factory{IO: io, Version: "test"})
	for _, tc := range []struct{ in, want string }{
		{"-v run x", "run -v x"},
		{"--no-color -v run --trials 2 x", "--no-color run -v --trials 2 x"},
		{"run -v x", "run -v x"},
		{"-v report merge a.json", "report merge -v a.json"},
		{"-v report --no-color merge a.json", "report --no-color merge -v a.json"},
	} {
		got, err := verboseFirst(root, strings.Fields(tc.in))
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestNoColorEverywhere: every command takes --no-color, after its name or before it, so that a
// script can pass the same flag to all of them; it reaches ColorEnabled either way.
func TestNoColorEverywhere(t *testing.T) {
	io, _, _ := iostreams.Test()
	root := NewCmdRoot(&Factory{IO: io, Version: "test"})
	for _, c := range root.Commands() {
		if c.Flag("no-color") == nil {
			t.Errorf("%s has no --no-color", c.Name())
		}
	}
	for _, args := range [][]string{{"validate", "--no-color", "does-not-exist"}, {"--no-color", "validate", "does-not-exist"}} {
		io, _, errOut := iostreams.Test()
		io.OutTTY = true
		io.Getenv = func(string) string { return "" }
		code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, args)
		if code != ExitUsage || !strings.Contains(errOut.String(), "no such file") {
			t.Errorf("%q: exit %d: %s", args, code, errOut)
		}
		if io.ColorEnabled(false) {
			t.Errorf("%q: colour still on", args)
		}
	}
}
