package terminal

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/result"
)

// Options control the terminal report.
type Options struct {
	Color bool
	// Verbose shows the call history of passing scenarios too.
	Verbose bool
}

// Write writes the human report: a line per scenario, each failure explained with its call
// history, and a summary with the idempotency metrics.
func Write(w io.Writer, rep *result.Report, opts Options) {
	st := newStyles(w, opts.Color)
	if rep.Err != nil {
		fmt.Fprintf(w, "%s %s\n", st.fail.Render("error:"), reporters.EscapeText(rep.Err.Error()))
	}
	var all result.Metrics
	for _, r := range rep.Scenarios {
		fmt.Fprintln(w, scenarioLine(st, r))
		for _, u := range r.Metrics.Unjudged {
			fmt.Fprintln(w, "  "+st.skip.Render("⚠ "+reporters.Escape(u.Message())))
		}
		for _, warning := range r.Warnings {
			fmt.Fprintln(w, "  "+st.skip.Render("⚠ "+reporters.EscapeText(warning)))
		}
		all.Add(r.Metrics)
	}
	for _, r := range rep.Scenarios {
		if r.Failure != nil {
			fmt.Fprintln(w)
			writeFailure(w, st, r)
		} else if opts.Verbose && r.Cut != nil && len(r.Cut.Calls) > 0 {
			fmt.Fprintf(w, "\n%s (trial %d, session %s, cut short)\n%s", reporters.Escape(r.Scenario.Name), r.Cut.Index, reporters.Escape(r.Cut.Session), reporters.IndentLines(reporters.History(r.Cut), "  "))
		} else if opts.Verbose && r.Trial1 != nil && len(r.Trial1.Calls) > 0 {
			// A scenario without calls (skipped, or assertions only) has no table to show.
			fmt.Fprintf(w, "\n%s (trial 1, session %s)\n%s", reporters.Escape(r.Scenario.Name), reporters.Escape(r.Trial1.Session), reporters.IndentLines(reporters.History(r.Trial1), "  "))
		}
	}
	fmt.Fprintln(w)
	if all.NoneJudged() {
		fmt.Fprintln(w, st.fail.Render(noneJudgedNote(all)))
	}
	fmt.Fprintln(w, reporters.Summary(rep))
}

// noneJudgedNote says that the exactly-once verdict judged none of a run's calls with a key.
func noneJudgedNote(m result.Metrics) string {
	return fmt.Sprintf("⚠ the exactly-once verdict judged none of the %s with a key: every tool called was declared idempotent or set verdict: off, so \"0 duplicate executions\" proves nothing; assert on sinks or probes", plural.Count(m.Keyed, "call"))
}

// scenarioLine is the one-line result of a scenario.
func scenarioLine(st styles, r *result.ScenarioResult) string {
	mark := st.pass.Render("✓")
	switch r.Status {
	case result.Failed:
		mark = st.fail.Render("✗")
	case result.Errored:
		mark = st.fail.Render("!")
	case result.Skipped:
		mark = st.skip.Render("-")
	case result.Interrupted:
		mark = st.skip.Render("⊘")
	}
	trials := fmt.Sprintf("%d/%d %s", r.TrialsPassed, r.Trials, plural.Noun(r.Trials, "trial"))
	switch r.Status {
	case result.Skipped:
		trials = "skipped"
	case result.Interrupted:
		trials = reporters.InterruptedNote(r)
	}
	line := fmt.Sprintf("%s %s  %s  %s", mark, reporters.Escape(r.Scenario.Name), st.dim.Render(trials), st.dim.Render(reporters.FormatDuration(r.Duration)))
	if r.TrialsFailed > 0 && r.TrialsRun > 1 {
		line += "  " + st.fail.Render(fmt.Sprintf("failed in %d/%d %s", r.TrialsFailed, r.TrialsRun, plural.Noun(r.TrialsRun, "trial")))
	}
	if w := reporters.Weak(r); w != "" {
		line += "  " + st.skip.Render("⚠ "+w)
	}
	return line
}

func writeFailure(w io.Writer, st styles, r *result.ScenarioResult) {
	f := r.Failure
	title := "FAIL"
	if r.Status == result.Errored {
		title = "ERROR"
	}
	fmt.Fprintf(w, "%s %s\n", st.fail.Render(title), st.bold.Render(reporters.Escape(r.Scenario.Name)))
	for _, l := range reporters.VerdictLead(f) {
		fmt.Fprintf(w, "  %s %s\n", st.fail.Render("verdict:"), indentRest(reporters.EscapeText(l), "  "))
	}
	fmt.Fprintf(w, "  %s: %s: %s\n", reporters.Escape(f.Pos.String()), reporters.StepLabel(f.Step), indentRest(reporters.EscapeText(f.Message), "  "))
	if f.Expression != "" {
		fmt.Fprintf(w, "  assert: %s\n", st.code.Render(reporters.EscapeText(f.Expression)))
	}
	for _, l := range f.Explanation {
		fmt.Fprintf(w, "    %s\n", reporters.EscapeText(l))
	}
	for _, name := range slices.Sorted(maps.Keys(f.ServiceOutput)) {
		if out := f.ServiceOutput[name]; out != "" {
			fmt.Fprintf(w, "  service %s, last output:\n%s", name, reporters.IndentLines(reporters.EscapeText(out), "    "))
		}
	}
	if t := r.FailedTrial; t != nil {
		if r.TrialsRun > 1 {
			fmt.Fprintf(w, "  failed in %d of %d %s; the first:\n", r.TrialsFailed, r.TrialsRun, plural.Noun(r.TrialsRun, "trial"))
		}
		fmt.Fprintf(w, "  trial %d of %d, session %s\n", t.Index, r.Trials, reporters.Escape(t.Session))
		if h := reporters.History(t); h != "" {
			fmt.Fprint(w, reporters.IndentLines(h, "    "))
		}
		fmt.Fprintf(w, "  rerun: %s\n", reporters.Escape(reporters.Rerun(r, t)))
	}
}

func indentRest(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}
