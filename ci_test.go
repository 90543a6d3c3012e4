//go:build unix

package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// workflow is the part of a GitHub Actions workflow this test reads.
type workflow struct {
	Jobs map[string]struct {
		Steps []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestCIDescribedOnce: CI is .ci/run, and the GitHub workflow runs it instead of describing CI a
// second time. A workflow that installed its own packages or ran its own go test would drift
// from .ci/run (it did: it installed one npm package of the six the tests need, and under
// CI=true the tests that need the others failed on GitHub only).
func TestCIDescribedOnce(t *testing.T) {
	b, err := os.ReadFile(".github/workflows/ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf(".github/workflows/ci.yml: %v", err)
	}
	if len(wf.Jobs) == 0 {
		t.Fatal(".github/workflows/ci.yml has no jobs")
	}
	runsCI := regexp.MustCompile(`(^|[\s;&|])(bash\s+)?(\./)?\.ci/run($|[\s;&|])`)
	// What only .ci/run may do: the tests, the installs, the examples' run.
	described := regexp.MustCompile(`\bgo (test|vet)\b|\bnpm (install|ci|i)\b|\bapt(-get)? install\b|\bgo run \. run\b`)
	for name, job := range wf.Jobs {
		found, uploads := false, false
		for i, s := range job.Steps {
			if runsCI.MatchString(s.Run) {
				found = true
			}
			if m := described.FindString(s.Run); m != "" {
				t.Errorf("job %s, step %d runs %q itself: that belongs in .ci/run, which CI runs", name, i+1, m)
			}
			if strings.HasPrefix(s.Uses, "actions/upload-artifact@") && strings.TrimSuffix(s.With["path"], "/") == ".cache/artifacts" {
				uploads = true
			}
		}
		if !found {
			t.Errorf("job %s: no step runs .ci/run (run: bash .ci/run)", name)
		}
		if !uploads {
			t.Errorf("job %s: no step uploads .cache/artifacts, where .ci/run leaves the reports and the screenshot", name)
		}
	}
	script, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), `IDEMTEST_ARTIFACTS="${IDEMTEST_ARTIFACTS:-$PWD/.cache/artifacts}"`) {
		t.Error(".ci/run does not keep its artefacts in .cache/artifacts, the directory the workflow uploads")
	}
}

// TestActionRunsItsScript keeps action.yml a thin shell around .github/action/idemtest.sh, the
// script testdata/script/action.txtar and action_test.go run: a step that did the work itself
// would be untested. The script runs twice, resolve (validate, download a release) and run, each
// given every input.
func TestActionRunsItsScript(t *testing.T) {
	b, err := os.ReadFile("action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Inputs map[string]struct {
			Default *string `yaml:"default"`
		} `yaml:"inputs"`
		Runs struct {
			Using string `yaml:"using"`
			Steps []struct {
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				Env  map[string]string `yaml:"env"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(b, &action); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if action.Runs.Using != "composite" {
		t.Errorf("runs.using = %q, want composite", action.Runs.Using)
	}
	scripts := 0
	for _, s := range action.Runs.Steps {
		if s.Run == "" {
			continue
		}
		if !strings.Contains(s.Run, ".github/action/idemtest.sh") {
			t.Errorf("step runs %q itself; its work belongs in .github/action/idemtest.sh", s.Run)
			continue
		}
		scripts++
		// Every input reaches the script.
		for name := range action.Inputs {
			env := "INPUT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
			if !strings.Contains(s.Env[env], "inputs."+name) {
				t.Errorf("input %s does not reach the script as %s", name, env)
			}
		}
	}
	if scripts != 2 {
		t.Errorf("%d steps run the script, want 2 (resolve and run)", scripts)
	}
}
