package reporters_test

import (
	"os/exec"
	"testing"

	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
)

func TestRerun(t *testing.T) {
	tests := []struct {
		name, config, file, session, want string
	}{
		{"no config", "", "examples/scenarios/burst.yaml", "0123456789ab",
			"idemtest run examples/scenarios/burst.yaml --session 0123456789ab --trials 1"},
		{"config given or found", "examples/broken/none.yaml", "examples/scenarios/burst.yaml", "0123456789ab-3",
			"idemtest run --config examples/broken/none.yaml examples/scenarios/burst.yaml --session 0123456789ab-3 --trials 1"},
		{"spaces and quotes", "my conf/none.yaml", "it's here/a b.yaml", "my session",
			`idemtest run --config 'my conf/none.yaml' 'it'\''s here/a b.yaml' --session 'my session' --trials 1`},
		{"absolute paths stay as given", "/srv/ci/idemtest.yaml", "/srv/ci/s.yaml", "s",
			"idemtest run --config /srv/ci/idemtest.yaml /srv/ci/s.yaml --session s --trials 1"},
		{"a path that looks like a flag", "", "-x.yaml", "-s",
			"idemtest run ./-x.yaml --session -s --trials 1"},
		{"shell syntax in a session", "", "s.yaml", "$(touch pwned);`x`",
			`idemtest run s.yaml --session '$(touch pwned);` + "`x`" + `' --trials 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &result.ScenarioResult{Scenario: &scenario.Scenario{File: tt.file, Config: tt.config}}
			if got := reporters.Rerun(r, &result.Trial{Index: 1, Session: tt.session}); got != tt.want {
				t.Errorf("Rerun:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestShellQuote: a real shell reads every quoted word back as the one word it was.
func TestShellQuote(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, s := range []string{"plain", "", "a b", "it's", `"dq"`, "$HOME", "`id`", "a;b|c&d", "*", "~", "tab\there", "new\nline", "-flag", "ünï", `back\slash`, "'"} {
		t.Run(s, func(t *testing.T) {
			out, err := exec.Command(sh, "-c", `printf '%s' `+reporters.ShellQuote(s)).Output()
			if err != nil {
				t.Fatalf("sh: %v", err)
			}
			if string(out) != s {
				t.Errorf("ShellQuote(%q) = %s, read back by sh as %q", s, reporters.ShellQuote(s), out)
			}
		})
	}
}
