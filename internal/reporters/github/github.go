package github

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// Annotate writes workflow-command annotations for a run: an error on the scenario line of each
// failure (a notice for a failure the baseline knows, which does not fail the job), a warning on each scenario whose fan-outs did not overlap (it proved nothing about
// races), and an error for a run whose services did not start. File paths are made relative to
// workspace (GITHUB_WORKSPACE, the repository's checkout), which is what GitHub links to
// whatever directory idemtest ran in; "" leaves them as they are.
func Annotate(w io.Writer, rep *result.Report, workspace string) {
	if rep.Err != nil {
		fmt.Fprintf(w, "::error title=%s::%s\n", escapeProperty("idemtest: the run could not start"), escapeData(reporters.EscapeText(rep.Err.Error())))
	}
	for _, r := range rep.Scenarios {
		if f := r.Failure; f != nil {
			level, title := "error", "idemtest: "+reporters.Escape(r.Scenario.Name)
			if knownPasses(rep.Regressions, baseline.ScenarioSubject(r.Scenario.File, r.Scenario.Name)) {
				level, title = "notice", title+" (known: in the baseline)"
			}
			annotate(w, level, f.Pos, workspace, title, failureAnnotation(r))
		}
		if wk := reporters.Weak(r); wk != "" {
			annotate(w, "warning", r.Scenario.Pos, workspace, "idemtest: "+reporters.Escape(r.Scenario.Name),
				wk+": their copies were not all released before the first answer came back, so they proved nothing about races "+
					"(a narrower stagger, sync: last-byte, or single-packet over HTTP/2 releases them closer)")
		}
	}
}

// knownPasses reports whether subject's failure is in the baseline under a policy that lets a
// known failure pass (fail-on new): the job stays green, so the failure is a notice, not an error.
func knownPasses(res *baseline.Result, subject string) bool {
	return res != nil && res.FailOn != baseline.FailOnAny && res.IsKnown(subject)
}

// AnnotateLoadErrors annotates each problem found while loading scenario files, on its line.
func AnnotateLoadErrors(w io.Writer, errs yamlfile.Errors, workspace string) {
	for _, e := range errs {
		msg := e.Msg
		if e.Hint != "" {
			msg += "\nhint: " + e.Hint
		}
		annotate(w, "error", e.Pos, workspace, "idemtest: invalid scenario", msg)
	}
}

func failureAnnotation(r *result.ScenarioResult) string {
	f := r.Failure
	msg := f.Message
	if lead := reporters.VerdictLead(f); len(lead) > 0 {
		msg = "verdict: " + strings.Join(lead, "\nverdict: ") + "\n" + msg
	}
	if f.Expression != "" {
		msg += "\n" + f.Expression
	}
	for _, l := range f.Explanation {
		msg += "\n  " + l
	}
	if t := r.FailedTrial; t != nil {
		msg += fmt.Sprintf("\ntrial %d, session %s\nrerun: %s", t.Index, reporters.Escape(t.Session), reporters.Escape(reporters.Rerun(r, t)))
	}
	return msg
}

// annotate writes one workflow command; the position is left out when it names no file.
func annotate(w io.Writer, level string, pos scenario.Pos, workspace, title, msg string) {
	where := ""
	if pos.File != "" {
		where = "file=" + escapeProperty(WorkspacePath(pos.File, workspace))
		if pos.Line > 0 {
			where += fmt.Sprintf(",line=%d", pos.Line)
		}
		if pos.Col > 0 {
			where += fmt.Sprintf(",col=%d", pos.Col)
		}
		where += ","
	}
	fmt.Fprintf(w, "::%s %stitle=%s::%s\n", level, where, escapeProperty(title), escapeData(reporters.EscapeText(msg)))
}

// WorkspacePath is file relative to workspace, with forward slashes, as GitHub expects an
// annotation's path; a file outside the workspace, or no workspace, keeps its path.
func WorkspacePath(file, workspace string) string {
	if workspace == "" {
		return filepath.ToSlash(file)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return filepath.ToSlash(file)
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return filepath.ToSlash(file)
	}
	rel, err := filepath.Rel(ws, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(file)
	}
	return filepath.ToSlash(rel)
}

func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
