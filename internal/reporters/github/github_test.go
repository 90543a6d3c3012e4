package github

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/reporters/reporterstest"
)

func TestGitHubAnnotations(t *testing.T) {
	var buf bytes.Buffer
	Annotate(&buf, reporterstest.SampleReport(), "")
	reporterstest.Golden(t, "report.github.txt", buf.Bytes())
}

// TestRecordedGolden renders every recorded run as annotations and as a job summary.
func TestRecordedGolden(t *testing.T) {
	for _, rc := range reporterstest.Recordings {
		base := strings.TrimSuffix(rc.Name, ".json")
		t.Run(base, func(t *testing.T) {
			rep := reporterstest.Recorded(t, rc.Name)
			var gh, md bytes.Buffer
			Annotate(&gh, rep, "")
			reporterstest.Golden(t, base+".github.txt", gh.Bytes())
			if err := StepSummary(&md, rep); err != nil {
				t.Fatal(err)
			}
			reporterstest.Golden(t, base+".summary.md", md.Bytes())
		})
	}
}

// TestInterrupted: a scenario the interrupt stopped is not annotated as an error.
func TestInterrupted(t *testing.T) {
	var gh bytes.Buffer
	Annotate(&gh, reporterstest.Recorded(t, "run.interrupted.json"), "")
	if gh.Len() != 0 {
		t.Errorf("an interrupted scenario is annotated as an error: %s", gh.String())
	}
}

func TestStepSummary(t *testing.T) {
	rep := reporterstest.SampleReport()
	// A server's answer that tries to end the code fence and inject a table row.
	rep.Scenarios[2].Failure.Message += "\n```\n| injected | <script>x</script>"
	var buf bytes.Buffer
	if err := StepSummary(&buf, rep); err != nil {
		t.Fatal(err)
	}
	reporterstest.Golden(t, "report.summary.md", buf.Bytes())
	md := buf.String()
	for _, want := range []string{
		"### ❌ idemtest: 3 of 5 scenarios failed",
		"| 1 | 3 | 2 | 0 | 12% (1/8) |", // totals: passed, failed, duplicates, replays differ, replay rate
		"| burst executes once | failed | 2/5 passed | **1 duplicate execution** |",
		"| verdict only | failed | 0/1 passed | **1 duplicate execution** |",
		"&lt;script&gt;", // escaped in the summary line
		"````text\n",     // a fence longer than the server's
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
	// The server's bytes stay inside the fence, where GitHub shows them as text.
	_, fenced, _ := strings.Cut(md, "````text\n")
	fenced, _, _ = strings.Cut(fenced, "\n````\n")
	if strings.Count(md, "<script>") != strings.Count(fenced, "<script>") {
		t.Error("the server's HTML reached the summary outside a code fence")
	}
}

func TestWorkspacePath(t *testing.T) {
	wd, _ := os.Getwd()
	for _, tc := range []struct{ name, file, workspace, want string }{
		{"no workspace", "scenarios/a.yaml", "", "scenarios/a.yaml"},
		{"run from the workspace", "scenarios/a.yaml", wd, "scenarios/a.yaml"},
		{"run from a subdirectory", "scenarios/a.yaml", filepath.Dir(filepath.Dir(filepath.Dir(wd))), "internal/reporters/github/scenarios/a.yaml"},
		{"an absolute path inside", filepath.Join(wd, "x", "a.yaml"), wd, "x/a.yaml"},
		{"a path outside the workspace", "/elsewhere/a.yaml", wd, "/elsewhere/a.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WorkspacePath(tc.file, tc.workspace); got != tc.want {
				t.Errorf("WorkspacePath(%q, %q) = %q, want %q", tc.file, tc.workspace, got, tc.want)
			}
		})
	}
}
