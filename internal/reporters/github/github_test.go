package github

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/baseline"
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

// TestKnownFailures: with a baseline that knows every failure (fail-on new, the job passes) the
// failures are notices, not errors, and the summary's heading says the job is green by the
// baseline instead of "1 of 2 scenarios failed" beside a green job. Under fail-on any a known
// failure fails the job, so it stays an error; a new failure is an error either way.
func TestKnownFailures(t *testing.T) {
	for _, tc := range []struct {
		name, failOn, heading string
		known                 bool
		level                 string
	}{
		{"known, fail-on new", baseline.FailOnNew, "### ✅ idemtest: no new failures — 1 of 2 scenarios failed, all known in the baseline\n", true, "notice"},
		{"known, fail-on any", baseline.FailOnAny, "### ❌ idemtest: 1 of 2 scenarios failed\n", true, "error"},
		{"new", baseline.FailOnNew, "### ❌ idemtest: 1 of 2 scenarios failed\n", false, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := reporterstest.Recorded(t, "run.mixed.json")
			res := &baseline.Result{FailOn: tc.failOn}
			for _, r := range rep.Scenarios {
				if r.Failure == nil {
					continue
				}
				f := baseline.Failure{Subject: baseline.ScenarioSubject(r.Scenario.File, r.Scenario.Name), What: "failed"}
				if tc.known {
					res.Known = append(res.Known, f)
				} else {
					res.New = append(res.New, f)
				}
			}
			if len(res.Known)+len(res.New) != 1 {
				t.Fatalf("run.mixed.json has %d failures, want 1", len(res.Known)+len(res.New))
			}
			rep.Regressions = res
			var gh, md bytes.Buffer
			Annotate(&gh, rep, "")
			if err := StepSummary(&md, rep); err != nil {
				t.Fatal(err)
			}
			heading, _, _ := strings.Cut(md.String(), "\n")
			if heading+"\n" != tc.heading {
				t.Errorf("heading %q, want %q", heading, strings.TrimSuffix(tc.heading, "\n"))
			}
			lines := strings.Split(strings.TrimSuffix(gh.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "::"+tc.level+" file=") {
				t.Errorf("annotations %q, want one %s", lines, tc.level)
			}
		})
	}
}
