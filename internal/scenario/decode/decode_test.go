package decode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// noEnv is an environment in which no variable is set, so no test depends on the machine's.
func noEnv(string) (string, bool) { return "", false }

// writeFile writes src as name in a fresh directory and returns its path.
func writeFile(t *testing.T, name, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// scenarioOf decodes src as a scenario file without a config, and returns the problems found as
// errorLines does.
func scenarioOf(t *testing.T, src string) (*scenario.Scenario, []string) {
	t.Helper()
	f, root := yamlfile.Read(writeFile(t, "s.yaml", src), noEnv)
	if root == nil {
		t.Fatalf("not decoded: %v", f.Errs)
	}
	s := Scenario(context.Background(), f, root, nil, nil)
	return s, errorLines(f.Errs)
}

// configOf decodes src as an idemtest.yaml, and returns the problems found as errorLines does.
func configOf(t *testing.T, src string) (*ConfigFile, []string) {
	t.Helper()
	f, root := yamlfile.Read(writeFile(t, scenario.ConfigName, src), noEnv)
	if root == nil {
		t.Fatalf("not decoded: %v", f.Errs)
	}
	c := Config(context.Background(), f, root)
	return c, errorLines(f.Errs)
}

// errorLines renders each error as "line:col: message", followed by the hint's "did you mean"
// suggestion when it starts with one, in the order of their positions: what a table row compares whole,
// so an error at a wrong place, a changed message, a lost suggestion or an extra error all fail.
func errorLines(errs yamlfile.Errors) []string {
	errs = slices.Clone(errs)
	errs.Sort()
	var out []string
	for _, e := range errs {
		line := fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg)
		if strings.HasPrefix(e.Hint, "did you mean") {
			line += " (" + e.Hint[:strings.Index(e.Hint, "?")+1] + ")"
		}
		out = append(out, line)
	}
	return out
}

// badCase is a file that must not decode, with every error it must give.
type badCase struct {
	name string
	src  string
	// bug, when set, skips the row: the decoder does not do what want says yet.
	bug  string
	want []string
}

// checkBad decodes each case's src with decode and compares the errors with want.
func checkBad(t *testing.T, cases []badCase, decode func(t *testing.T, src string) []string) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.bug != "" {
				t.Skip("BUG: " + tc.bug)
			}
			got := decode(t, tc.src)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// scenarioErrors decodes src as a scenario and returns its errors.
func scenarioErrors(t *testing.T, src string) []string {
	_, errs := scenarioOf(t, src)
	return errs
}

// configErrors decodes src as an idemtest.yaml and returns its errors.
func configErrors(t *testing.T, src string) []string {
	_, errs := configOf(t, src)
	return errs
}

// TestScenarioRootErrors: the scenario's own fields.
func TestScenarioRootErrors(t *testing.T) {
	checkBad(t, []badCase{
		{name: "no name", src: "steps:\n  - sleep: 1ms\n",
			want: []string{"1:1: scenario has no name"}},
		{name: "name is not a string", src: "name: [a]\nsteps:\n  - sleep: 1ms\n",
			want: []string{"1:1: scenario has no name", `1:7: name must be a string, got a list`}},
		{name: "unknown field", src: "name: s\ntrails: 3\nsteps:\n  - sleep: 1ms\n",
			want: []string{`2:1: unknown field "trails" in scenario (did you mean "trials"?)`}},
		{name: "trials zero", src: "name: s\ntrials: 0\nsteps:\n  - sleep: 1ms\n",
			want: []string{"2:9: trials is 0, out of range"}},
		{name: "trials above the maximum", src: "name: s\ntrials: 100001\nsteps:\n  - sleep: 1ms\n",
			want: []string{"2:9: trials is 100001, out of range"}},
		{name: "trials not a number", src: "name: s\ntrials: many\nsteps:\n  - sleep: 1ms\n",
			want: []string{`2:9: trials must be a whole number, got "many"`}},
		{name: "tags not a list", src: "name: s\ntags: {a: b}\nsteps:\n  - sleep: 1ms\n",
			want: []string{"2:7: tags must be a list of strings, got a mapping"}},
		{name: "no steps", src: "name: s\n",
			want: []string{"1:1: scenario has no steps"}},
		{name: "empty steps", src: "name: s\nsteps: []\n",
			want: []string{"2:8: steps must be a non-empty list"}},
		{name: "steps not a list", src: "name: s\nsteps: {sleep: 1ms}\n",
			want: []string{"2:8: steps must be a non-empty list"}},
		{name: "root not a mapping", src: "- sleep: 1ms\n",
			want: []string{"1:1: scenario must be a mapping (key: value lines), got a list"}},
		{name: "allow_hosts not a list", src: "name: s\nallow_hosts: {a: b}\nsteps:\n  - sleep: 1ms\n",
			want: []string{"2:14: allow_hosts must be a list of strings, got a mapping"}},
		{name: "endpoints not a mapping", src: "name: s\nendpoints: [a]\nsteps:\n  - sleep: 1ms\n",
			want: []string{"2:12: endpoints must be a mapping, got a list"}},
	}, scenarioErrors)
}

// TestScenarioRoot: the root fields and the merge of a config's sections under the scenario's.
func TestScenarioRoot(t *testing.T) {
	cfgFile, root := yamlfile.Read(writeFile(t, scenario.ConfigName, `endpoint: shared
endpoints:
  shared: {http: {url: "http://127.0.0.1:1/{tool}"}}
  both: {http: {url: "http://127.0.0.1:2/{tool}"}}
allow_hosts: [cfg.example]
`), noEnv)
	cfg := Config(context.Background(), cfgFile, root)
	if len(cfgFile.Errs) > 0 {
		t.Fatal(cfgFile.Errs)
	}
	if cfg.Endpoint != "shared" || cfg.EndpointPos.Line != 1 || cfg.EndpointPos.Col != 11 {
		t.Errorf("config endpoint %q at %v", cfg.Endpoint, cfg.EndpointPos)
	}
	f, root := yamlfile.Read(writeFile(t, "s.yaml", `name: merged
description: ignored by the model
tags: [a, b]
trials: 7
endpoints:
  both: {http: {url: "http://127.0.0.1:3/{tool}"}}
allow_hosts: own.example
steps:
  - sleep: 1ms
`), noEnv)
	s := Scenario(context.Background(), f, root, cfg, []string{"flag.example"})
	if len(f.Errs) > 0 {
		t.Fatal(f.Errs)
	}
	if s.Name != "merged" || strings.Join(s.Tags, ",") != "a,b" || s.Trials != 7 || s.Config != cfg.Path || s.File != f.Path {
		t.Errorf("scenario %+v", s)
	}
	if s.Endpoint != "shared" || s.EndpointPos != cfg.EndpointPos {
		t.Errorf("default endpoint %q at %v, want the config's", s.Endpoint, s.EndpointPos)
	}
	if len(s.Endpoints) != 2 || s.Endpoints["both"].HTTP.URL.Source != "http://127.0.0.1:3/{tool}" || s.Endpoints["shared"].HTTP.URL.Source != "http://127.0.0.1:1/{tool}" {
		t.Errorf("endpoints: the scenario's must win by name: %v", s.Endpoints)
	}
	if got := strings.Join(s.AllowHosts, ","); got != "own.example,cfg.example,flag.example" {
		t.Errorf("allow_hosts %s", got)
	}
	if len(s.Steps) != 1 || s.Steps[0].Kind != scenario.SleepStep {
		t.Errorf("steps %+v", s.Steps)
	}
}

// TestConfigRootErrors: the keys of idemtest.yaml itself.
func TestConfigRootErrors(t *testing.T) {
	checkBad(t, []badCase{
		{name: "unknown section", src: "sink: {}\n",
			want: []string{`1:1: unknown field "sink" in config (did you mean "sinks"?)`}},
		{name: "steps belong in a scenario", src: "steps: []\n",
			want: []string{`1:1: unknown field "steps" in config`}},
		{name: "default endpoint not a string", src: "endpoint: {a: b}\n",
			want: []string{"1:11: endpoint must be a string, got a mapping"}},
		{name: "root not a mapping", src: "just text\n",
			want: []string{`1:1: config must be a mapping (key: value lines), got "just text"`}},
	}, configErrors)
}
