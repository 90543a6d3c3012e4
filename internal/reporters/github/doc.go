// Package github writes what GitHub Actions shows of a run: workflow-command annotations on the
// scenario lines that failed, and the Markdown job summary ($GITHUB_STEP_SUMMARY).
//
//	github.Annotate(out, rep, os.Getenv("GITHUB_WORKSPACE"))
//	err := github.StepSummary(f, rep)
package github
