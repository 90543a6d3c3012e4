//go:build unix

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v4"
)

// A GitHub Actions workflow as TestWorkflowsLint reads one beyond actionlint: its jobs' steps.
type lintedWorkflow struct {
	On   any `yaml:"on"`
	Jobs map[string]struct {
		Steps []struct {
			Uses string         `yaml:"uses"`
			Run  string         `yaml:"run"`
			With map[string]any `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// readmeWorkflows returns the ```yaml blocks of README.md and docs/*.md that are GitHub Actions
// workflows (they name an action, a runner or an expression; GitLab's do not), each by the file
// and line it starts on.
func readmeWorkflows(t *testing.T) map[string]string {
	t.Helper()
	files, err := docFiles(".")
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		workflowBlocks(f, string(b), blocks)
	}
	return blocks
}

// workflowBlocks adds the GitHub Actions workflows of the Markdown text of file to blocks.
func workflowBlocks(file, text string, blocks map[string]string) {
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```yaml" {
			continue
		}
		start := i + 1
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		text := strings.Join(body, "\n") + "\n"
		if strings.Contains(text, "uses: ") || strings.Contains(text, "runs-on:") || strings.Contains(text, "${{") {
			blocks[fmt.Sprintf("%s:%d", file, start)] = text
		}
	}
}

// TestWorkflowsLint: every workflow README.md and docs/*.md show is a whole file a user can commit as it is,
// and it and this repository's own workflows pass actionlint (as a library, pinned in go.mod):
// a workflow with on:, each job that reads the repository checking it out, Go set up before
// any go command, and every input given to the idemtest action one that action.yml declares.
func TestWorkflowsLint(t *testing.T) {
	files := readmeWorkflows(t)
	if len(files) < 3 {
		t.Fatalf("found %d workflows in README.md and docs/*.md, want the CI, action and matrix ones", len(files))
	}
	own, err := filepath.Glob(".github/workflows/*.y*ml")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range own {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = string(b)
	}
	inputs := actionInputs(t)
	for name, text := range files {
		t.Run(name, func(t *testing.T) {
			for _, p := range lintWorkflow(t, name, text, inputs) {
				t.Error(p)
			}
		})
	}
}

// TestWorkflowsLintCatches: the lint goes red on a workflow that is not whole, one that reads the
// repository before checking it out, runs go before setting it up, or gives the action an input
// it does not have.
func TestWorkflowsLintCatches(t *testing.T) {
	inputs := actionInputs(t)
	head := "name: x\non: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
	for _, tc := range []struct{ name, text, want string }{
		{"steps only", "- run: idemtest run scenarios/\n", "mapping node is expected"},
		{"no on", "jobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo\n", "no on:"},
		{"an input the action lacks", head + "      - uses: actions/checkout@v4\n      - uses: idemtest/idemtest@v1.0.0\n        with: {pathz: scenarios/}\n", `no input "pathz"`},
		{"no checkout", head + "      - uses: idemtest/idemtest@v1.0.0\n        with: {paths: scenarios/}\n", "before actions/checkout"},
		{"no setup-go", head + "      - uses: actions/checkout@v4\n      - run: go install github.com/idemtest/idemtest@latest\n", "before actions/setup-go"},
		{"a bad expression", head + "      - run: echo ${{ matrix.nope }}\n", "property \"nope\" is not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := lintWorkflow(t, tc.name, tc.text, inputs)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("problems %q, want one saying %q", problems, tc.want)
			}
		})
	}
}

// lintWorkflow returns actionlint's errors and this test's own problems with one workflow.
func lintWorkflow(t *testing.T, name, text string, inputs []string) []string {
	t.Helper()
	// No shellcheck or pyflakes (empty executables): the verdict does not depend on what the
	// machine has installed.
	linter, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := linter.Lint(name, []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, e := range errs {
		problems = append(problems, fmt.Sprintf("%s: line %d: col %d: %s [%s]", name, e.Line, e.Column, e.Message, e.Kind))
	}
	var wf lintedWorkflow
	if err := yaml.Unmarshal([]byte(text), &wf); err != nil {
		return append(problems, fmt.Sprintf("%s: %v", name, err))
	}
	if wf.On == nil {
		problems = append(problems, name+": no on: (not a whole workflow)")
	}
	for job, j := range wf.Jobs {
		checkout, setupGo := false, false
		for i, s := range j.Steps {
			switch {
			case strings.HasPrefix(s.Uses, "actions/checkout@"):
				checkout = true
			case strings.HasPrefix(s.Uses, "actions/setup-go@"):
				setupGo = true
			case strings.HasPrefix(s.Uses, "idemtest/idemtest@"):
				if !checkout {
					problems = append(problems, fmt.Sprintf("%s: job %s, step %d uses the action before actions/checkout: it has no scenarios or config to read", name, job, i+1))
				}
				for k := range s.With {
					if !slices.Contains(inputs, k) {
						problems = append(problems, fmt.Sprintf("%s: job %s, step %d: the action has no input %q (action.yml declares %s)", name, job, i+1, k, strings.Join(inputs, ", ")))
					}
				}
			}
			if (strings.Contains(s.Run, "idemtest run ") || strings.Contains(s.Run, "idemtest check ")) && !checkout {
				problems = append(problems, fmt.Sprintf("%s: job %s, step %d runs idemtest on the repository's files before actions/checkout", name, job, i+1))
			}
			if (strings.Contains(s.Run, "go install ") || strings.Contains(s.Run, "go run ")) && !setupGo {
				problems = append(problems, fmt.Sprintf("%s: job %s, step %d runs go before actions/setup-go", name, job, i+1))
			}
		}
	}
	return problems
}

// actionInputs are the names of action.yml's inputs.
func actionInputs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Inputs map[string]any `yaml:"inputs"`
	}
	if err := yaml.Unmarshal(b, &action); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	var names []string
	for k := range action.Inputs {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
