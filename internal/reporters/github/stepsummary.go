package github

import (
	"fmt"
	"io"
	"strings"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/result"
)

// StepSummary writes the Markdown job summary of a GitHub Actions step ($GITHUB_STEP_SUMMARY):
// the totals with the verdict's duplicate count and the rates, a table of the scenarios that
// failed, errored or executed a key twice, and each failure explained. Everything that came
// from a scenario or a server is escaped: table cells as HTML text, explanations in a fence
// longer than any backtick run they hold.
func StepSummary(w io.Writer, rep *result.Report) error {
	_, err := io.WriteString(w, stepSummary(rep))
	return err
}

func stepSummary(rep *result.Report) string {
	var b strings.Builder
	var passed, bad int
	var m result.Metrics
	var failing []*result.ScenarioResult
	for _, r := range rep.Scenarios {
		m.Add(r.Metrics)
		switch {
		case r.Status == result.Failed || r.Status == result.Errored || r.Metrics.DuplicateExecutions > 0 || r.Metrics.ReplaysDiffer > 0:
			bad++
			failing = append(failing, r)
		case r.Status == result.Passed:
			passed++
		}
	}
	mark := "✅"
	gated := rep.Regressions != nil && !rep.Regressions.Failed()
	if failed := rep.Failed(); (rep.Regressions == nil && failed) || (rep.Regressions != nil && rep.Regressions.Failed()) {
		mark = "❌"
	}
	if rep.Interrupted {
		mark = "⚠️ interrupted:"
	}
	switch {
	case rep.Err != nil && len(rep.Scenarios) == 0:
		fmt.Fprintf(&b, "### %s idemtest: the run errored before any scenario ran\n\n", mark)
	case gated && bad > 0 && !rep.Interrupted && rep.Err == nil:
		// Green by the baseline: say so, rather than "1 of 4 failed" beside a green job.
		fmt.Fprintf(&b, "### %s idemtest: no new failures — %d of %d %s failed, all known in the baseline\n\n", mark, bad, len(rep.Scenarios), plural.Noun(len(rep.Scenarios), "scenario"))
	default:
		fmt.Fprintf(&b, "### %s idemtest: %d of %d %s failed\n\n", mark, bad, len(rep.Scenarios), plural.Noun(len(rep.Scenarios), "scenario"))
	}
	if rep.Err != nil {
		fmt.Fprintf(&b, "**error:** %s\n\n", mdText(rep.Err.Error()))
	}
	fmt.Fprintf(&b, "| passed | failed | duplicate executions | replays differ | replay rate | conflict rate | calls |\n")
	fmt.Fprintf(&b, "|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| %d | %d | %d | %d | %s | %s | %d |\n\n", passed, bad, m.DuplicateExecutions, m.ReplaysDiffer,
		reporters.Rate(m.Replayed, m.Repeats()), reporters.Rate(m.Conflicts, m.Keyed), m.Calls)
	b.WriteString(gateSummary(rep.Regressions, rep.Coverage))
	if len(failing) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "| scenario | status | trials | verdict | replay rate | conflict rate | where |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---:|---:|---|\n")
	for _, r := range failing {
		verdict := "executed once"
		if d := r.Metrics.DuplicateExecutions; d > 0 {
			verdict = "**" + plural.Count(d, "duplicate execution") + "**"
		}
		if d := r.Metrics.ReplaysDiffer; d > 0 {
			verdict += ", " + reporters.ReplaysDiffer(d)
		}
		where := fmt.Sprintf("`%s:%d`", mdCode(r.Scenario.File), r.Scenario.Pos.Line)
		if f := r.Failure; f != nil {
			where = fmt.Sprintf("`%s` %s", mdCode(f.Pos.String()), mdText(reporters.StepLabel(f.Step)))
		}
		fmt.Fprintf(&b, "| %s | %s | %d/%d passed | %s | %s | %s | %s |\n", mdText(r.Scenario.Name), r.Status, r.TrialsPassed, r.Trials, verdict,
			reporters.Rate(r.Metrics.Replayed, r.Metrics.Repeats()), reporters.Rate(r.Metrics.Conflicts, r.Metrics.Keyed), where)
	}
	b.WriteString("\n")
	for _, r := range failing {
		f := r.Failure
		if f == nil {
			continue
		}
		fmt.Fprintf(&b, "<details><summary><b>%s</b>: %s</summary>\n\n", mdText(r.Scenario.Name), mdText(reporters.OneLine(f.Message, 200)))
		text := reporters.FailureText(f)
		if t := r.FailedTrial; t != nil {
			text += fmt.Sprintf("trial %d of %d, session %s\nrerun: %s\n", t.Index, r.Trials, t.Session, reporters.Rerun(r, t))
		}
		fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
		fmt.Fprintf(&b, "%stext\n%s%s\n\n</details>\n\n", fence, text, fence)
	}
	return b.String()
}

// mdText is s as the text of a Markdown table cell or summary: on one line, its HTML and
// Markdown specials escaped.
func mdText(s string) string {
	s = reporters.EscapeText(strings.Join(strings.Fields(s), " "))
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "\\|", "*", "\\*", "_", "\\_", "`", "\\`", "[", "\\[", "]", "\\]").Replace(s)
}

// mdCode is s inside a one-backtick code span of a table cell.
func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "|", "\\|", "\n", " ").Replace(reporters.EscapeText(s))
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// gateSummary is the gate's part of the job summary (DESIGN §12): the baseline line, then the
// new, known and fixed failures in that order, then each endpoint's untested mutating tools and
// exemptions with their reasons. Empty without a baseline or coverage.
func gateSummary(res *baseline.Result, cov []result.Coverage) string {
	var b strings.Builder
	if res != nil {
		fmt.Fprintf(&b, "**%s**\n\n", mdText(res.Line()))
		for _, g := range []struct {
			name string
			list []baseline.Failure
		}{{"New", res.New}, {"Known", res.Known}, {"Fixed", res.Fixed}} {
			if len(g.list) == 0 {
				continue
			}
			fmt.Fprintf(&b, "%s (%d):\n\n", g.name, len(g.list))
			for _, f := range g.list {
				fmt.Fprintf(&b, "- %s\n", mdText(f.String()))
			}
			b.WriteString("\n")
		}
	}
	for _, c := range cov {
		switch {
		case c.Error != "":
			fmt.Fprintf(&b, "**Coverage:** endpoint %s: its tools could not be listed: %s\n\n", mdText(c.Endpoint), mdText(c.Error))
		case len(c.Uncovered) > 0:
			var names []string
			for _, u := range c.Uncovered {
				names = append(names, mdText(u.Tool))
			}
			fmt.Fprintf(&b, "**Coverage:** endpoint %s: %d of %d mutating tools not tested: %s\n\n", mdText(c.Endpoint), len(c.Uncovered), c.Mutating, strings.Join(names, ", "))
		}
		for _, e := range c.Exempt {
			fmt.Fprintf(&b, "**Coverage:** endpoint %s: %s exempt: %s\n\n", mdText(c.Endpoint), mdText(e.Tool), mdText(e.Reason))
		}
	}
	return b.String()
}
