package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/iostreams"
)

// TestDynamicCompletion drives cobra's hidden __complete command, as the shell scripts of
// "idemtest completion SHELL" do: --endpoint completes the config's endpoints, --tag the tags
// of the scenarios the run would load; neither offers file names.
func TestDynamicCompletion(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"endpoints of the config", []string{"tools", "--config", "../examples/scenarios/idemtest.yaml", "--endpoint", ""},
			"refunds\nrefunds_mcp\nrefunds_stdio\n:4\n"},
		{"endpoints with a prefix, on check", []string{"check", "--config", "../examples/scenarios/idemtest.yaml", "--endpoint", "refunds_"},
			"refunds_mcp\nrefunds_stdio\n:4\n"},
		{"no config: nothing, no error", []string{"init", "--config", "does-not-exist.yaml", "--endpoint", ""}, ":4\n"},
		{"tags of the scenarios given", []string{"run", "../examples/scenarios/mcp", "--tag", ""}, "concurrency\nkeys\nmcp\nretry\nverdict\n:4\n"}, // not sinks or openapi: only mcp/ is read
		{"tags with a prefix", []string{"run", "../examples/scenarios", "--tag", "re"}, "refunds\nretry\n:4\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			io, out, errOut := iostreams.Test()
			code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, append([]string{"__complete"}, tc.args...))
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if got := out.String(); got != tc.want {
				t.Errorf("completions %q, want %q", got, tc.want)
			}
			if strings.Contains(errOut.String(), "idemtest:") {
				t.Errorf("an error reached the shell: %s", errOut)
			}
		})
	}
}
