package reporters

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/runner"
)

// TerminalOptions control the terminal report.
type TerminalOptions struct {
	Color bool
	// Verbose shows the call history of passing scenarios too.
	Verbose bool
}

// Terminal writes the human report: a line per scenario, each failure explained with its call
// history, and a summary with the idempotency metrics.
func Terminal(w io.Writer, rep *runner.Report, opts TerminalOptions) {
	st := newStyles(w, opts.Color)
	if rep.Err != nil {
		fmt.Fprintf(w, "%s %s\n", st.fail.Render("error:"), EscapeText(rep.Err.Error()))
	}
	var all runner.Metrics
	for _, r := range rep.Scenarios {
		fmt.Fprintln(w, ScenarioLine(st, r))
		for _, u := range r.Metrics.Unjudged {
			fmt.Fprintln(w, "  "+st.skip.Render("⚠ "+Escape(u.Message())))
		}
		for _, warning := range r.Warnings {
			fmt.Fprintln(w, "  "+st.skip.Render("⚠ "+EscapeText(warning)))
		}
		all.Add(r.Metrics)
	}
	for _, r := range rep.Scenarios {
		if r.Failure != nil {
			fmt.Fprintln(w)
			writeFailure(w, st, r)
		} else if opts.Verbose && r.Cut != nil && len(r.Cut.Calls) > 0 {
			fmt.Fprintf(w, "\n%s (trial %d, session %s, cut short)\n%s", Escape(r.Scenario.Name), r.Cut.Index, Escape(r.Cut.Session), indentLines(History(r.Cut), "  "))
		} else if opts.Verbose && r.Trial1 != nil && len(r.Trial1.Calls) > 0 {
			// A scenario without calls (skipped, or assertions only) has no table to show.
			fmt.Fprintf(w, "\n%s (trial 1, session %s)\n%s", Escape(r.Scenario.Name), Escape(r.Trial1.Session), indentLines(History(r.Trial1), "  "))
		}
	}
	fmt.Fprintln(w)
	if all.NoneJudged() {
		fmt.Fprintln(w, st.fail.Render(NoneJudgedNote(all)))
	}
	fmt.Fprintln(w, Summary(rep))
}

// NoneJudgedNote says that the exactly-once verdict judged none of a run's calls with a key.
func NoneJudgedNote(m runner.Metrics) string {
	return fmt.Sprintf("⚠ the exactly-once verdict judged none of the %d calls with a key: every tool called was declared idempotent or set verdict: off, so \"0 duplicate executions\" proves nothing; assert on sinks or probes", m.Keyed)
}

// ScenarioLine is the one-line result of a scenario.
func ScenarioLine(st styles, r *runner.ScenarioResult) string {
	mark := st.pass.Render("✓")
	switch r.Status {
	case runner.Failed:
		mark = st.fail.Render("✗")
	case runner.Errored:
		mark = st.fail.Render("!")
	case runner.Skipped:
		mark = st.skip.Render("-")
	case runner.Interrupted:
		mark = st.skip.Render("⊘")
	}
	trials := fmt.Sprintf("%d/%d trials", r.TrialsPassed, r.Trials)
	switch r.Status {
	case runner.Skipped:
		trials = "skipped"
	case runner.Interrupted:
		trials = InterruptedNote(r)
	}
	line := fmt.Sprintf("%s %s  %s  %s", mark, Escape(r.Scenario.Name), st.dim.Render(trials), st.dim.Render(formatDuration(r.Duration)))
	if r.TrialsFailed > 0 && r.TrialsRun > 1 {
		line += "  " + st.fail.Render(fmt.Sprintf("failed in %d/%d trials", r.TrialsFailed, r.TrialsRun))
	}
	if w := weak(r); w != "" {
		line += "  " + st.skip.Render("⚠ "+w)
	}
	return line
}

// InterruptedNote says where the interrupt stopped a scenario: before it started, between
// trials, or in the middle of one.
func InterruptedNote(r *runner.ScenarioResult) string {
	switch {
	case r.Cut != nil:
		return fmt.Sprintf("interrupted in trial %d of %d (%d passed before)", r.Cut.Index, r.Trials, r.TrialsPassed)
	case r.TrialsRun > 0:
		return fmt.Sprintf("interrupted after %d of %d trials (%d passed)", r.TrialsRun, r.Trials, r.TrialsPassed)
	}
	return "interrupted before it started"
}

// weak says when a scenario's fan-outs did not race: copies answered before all were released.
func weak(r *runner.ScenarioResult) string {
	if r.Fanouts == 0 || r.Overlapped == r.Fanouts {
		return ""
	}
	return fmt.Sprintf("weak: %d/%d fan-outs did not overlap", r.Fanouts-r.Overlapped, r.Fanouts)
}

func writeFailure(w io.Writer, st styles, r *runner.ScenarioResult) {
	f := r.Failure
	title := "FAIL"
	if r.Status == runner.Errored {
		title = "ERROR"
	}
	fmt.Fprintf(w, "%s %s\n", st.fail.Render(title), st.bold.Render(Escape(r.Scenario.Name)))
	for _, l := range VerdictLead(f) {
		fmt.Fprintf(w, "  %s %s\n", st.fail.Render("verdict:"), indentRest(EscapeText(l), "  "))
	}
	fmt.Fprintf(w, "  %s: %s: %s\n", f.Pos, stepLabel(f.Step), indentRest(EscapeText(f.Message), "  "))
	if f.Expression != "" {
		fmt.Fprintf(w, "  assert: %s\n", st.code.Render(EscapeText(f.Expression)))
	}
	for _, l := range f.Explanation {
		fmt.Fprintf(w, "    %s\n", EscapeText(l))
	}
	for _, name := range sortedKeys(f.ServiceOutput) {
		if out := f.ServiceOutput[name]; out != "" {
			fmt.Fprintf(w, "  service %s, last output:\n%s", name, indentLines(EscapeText(out), "    "))
		}
	}
	if t := r.FailedTrial; t != nil {
		if r.TrialsRun > 1 {
			fmt.Fprintf(w, "  failed in %d of %d trials; the first:\n", r.TrialsFailed, r.TrialsRun)
		}
		fmt.Fprintf(w, "  trial %d of %d, session %s (rerun with --session %s --trials 1)\n", t.Index, r.Trials, Escape(t.Session), Escape(t.Session))
		if h := History(t); h != "" {
			fmt.Fprint(w, indentLines(h, "    "))
		}
	}
}

// Summary is the closing line: counts and the idempotency metrics.
func Summary(rep *runner.Report) string {
	var passed, failed, errored, skipped, interrupted int
	if rep.Err != nil {
		errored++ // the run itself, as JUnit and JSON count it
	}
	var m runner.Metrics
	for _, r := range rep.Scenarios {
		switch r.Status {
		case runner.Passed:
			passed++
		case runner.Failed:
			failed++
		case runner.Errored:
			errored++
		case runner.Skipped:
			skipped++
		case runner.Interrupted:
			interrupted++
		}
		m.Add(r.Metrics)
	}
	parts := []string{fmt.Sprintf("%d passed, %d failed", passed, failed)}
	if errored > 0 {
		parts[0] += fmt.Sprintf(", %d errored", errored)
	}
	if skipped > 0 {
		parts[0] += fmt.Sprintf(", %d skipped", skipped)
	}
	if interrupted > 0 {
		parts[0] += fmt.Sprintf(", %d interrupted", interrupted)
	}
	var weakScenarios int
	for _, r := range rep.Scenarios {
		if weak(r) != "" {
			weakScenarios++
		}
	}
	if weakScenarios > 0 {
		parts = append(parts, fmt.Sprintf("%d weak (fan-outs that did not overlap)", weakScenarios))
	}
	// The exactly-once verdict's count, always shown: 0 is the claim a green run makes.
	parts = append(parts, fmt.Sprintf("%d duplicate executions", m.DuplicateExecutions))
	if n := m.UnjudgedCalls(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d calls not judged", n))
	}
	if m.ReplaysDiffer > 0 {
		parts = append(parts, fmt.Sprintf("%d replays differ", m.ReplaysDiffer))
	}
	parts = append(parts,
		fmt.Sprintf("%d calls", m.Calls),
		"replay rate "+rate(m.Replayed, m.Repeats()),
		"conflict rate "+rate(m.Conflicts, m.Keyed),
		formatDuration(rep.Duration))
	s := strings.Join(parts, " · ")
	if rep.Interrupted {
		s = "interrupted: " + s
	}
	return s
}

func formatDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func indentLines(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func indentRest(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}
