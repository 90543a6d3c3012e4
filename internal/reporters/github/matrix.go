package github

import (
	"fmt"
	"io"
	"strings"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
)

// AnnotateMatrix writes workflow-command annotations for a check's or a sweep's matrix, as
// Annotate does for a run: an error for each ✗ cell (sweep's run 0 included), a notice for a ✗
// the baseline knows when the policy lets it pass (fail-on new: the job stays green). A cell
// has no scenario line: the annotations name no file, and GitHub lists them on the job. Every
// text from a server or a report (tool names, reasons, details) is escaped as run's are.
func AnnotateMatrix(w io.Writer, m matrix.Matrix, res *baseline.Result) {
	for _, c := range failingCells(m) {
		if c.Status != matrix.Fail {
			continue
		}
		level, title := "error", matrixTitle(m)+": "+reporters.Escape(c.Label)
		if c.Known && res != nil && res.FailOn != baseline.FailOnAny {
			level, title = "notice", title+" (known: in the baseline)"
		}
		msg := c.Reason
		for _, d := range c.Details {
			msg += "\n  " + d
		}
		annotate(w, level, scenario.Pos{}, "", title, msg)
	}
}

// matrixTitle is what names a matrix's annotations: "idemtest check" or "idemtest sweep".
func matrixTitle(m matrix.Matrix) string {
	if m.Corner == "CALL" {
		return "idemtest sweep"
	}
	return "idemtest check"
}

// failingCells are the cells of a matrix a reader must look at, in reading order (the lead
// first): ✗, ⚠ and ?; a ✓, a skipped cell and a placeholder (not faulted, not reached) are not.
func failingCells(m matrix.Matrix) []matrix.Cell {
	var cells []matrix.Cell
	keep := func(c matrix.Cell) {
		if c.Placeholder == "" && (c.Status == matrix.Fail || c.Status == matrix.Warn || c.Status == matrix.Inconclusive) {
			cells = append(cells, c)
		}
	}
	if m.Lead != nil {
		keep(*m.Lead)
	}
	for _, row := range m.Rows {
		for _, c := range row.Cells {
			keep(c)
		}
	}
	return cells
}

// MatrixSummary writes the Markdown job summary of a check or a sweep ($GITHUB_STEP_SUMMARY), as
// StepSummary does for a run: a heading with the gate's verdict (green by the baseline says
// so), the matrix as a table (a row per tool or call, a column per check or fault), the tally,
// the gate's lines, a table of the cells that are not ✓ (✗, ⚠, ?), each marked new or known
// when there is a baseline, and each explained in a fence. Everything from a server or a report
// is escaped as in StepSummary.
func MatrixSummary(w io.Writer, m matrix.Matrix, res *baseline.Result, cov []result.Coverage) error {
	_, err := io.WriteString(w, matrixSummary(m, res, cov))
	return err
}

func matrixSummary(m matrix.Matrix, res *baseline.Result, cov []result.Coverage) string {
	var b strings.Builder
	cells := failingCells(m)
	failed, total := 0, 0
	count := func(c matrix.Cell) {
		if c.Placeholder != "" {
			return
		}
		total++
		if c.Status == matrix.Fail {
			failed++
		}
	}
	if m.Lead != nil {
		count(*m.Lead)
	}
	for _, row := range m.Rows {
		for _, c := range row.Cells {
			count(c)
		}
	}
	mark := "✅"
	if (res == nil && m.Failed) || (res != nil && res.Failed()) {
		mark = "❌"
	}
	if m.Interrupted {
		mark = "⚠️ interrupted:"
	}
	title := mdText(m.Title)
	unit := plural.Noun(total, "cell")
	switch {
	case res != nil && !res.Failed() && failed > 0 && !m.Interrupted:
		fmt.Fprintf(&b, "### %s %s: no new failures — %d of %d %s failed, all known in the baseline\n\n", mark, title, failed, total, unit)
	default:
		fmt.Fprintf(&b, "### %s %s: %d of %d %s failed\n\n", mark, title, failed, total, unit)
	}
	if c := m.Lead; c != nil {
		fmt.Fprintf(&b, "%s: %s %s\n\n", mdText(c.Label), c.Status.Symbol(), mdText(c.Reason))
	}
	for _, l := range m.Preamble {
		fmt.Fprintf(&b, "%s\n\n", mdText(l.Text))
	}
	if len(m.Rows) > 0 {
		b.WriteString("| " + mdText(m.Corner))
		for _, col := range m.Columns {
			b.WriteString(" | " + mdText(col))
		}
		b.WriteString(" |\n|---")
		b.WriteString(strings.Repeat("|:-:", len(m.Columns)))
		b.WriteString("|\n")
		for _, row := range m.Rows {
			b.WriteString("| " + mdText(row.Name))
			for i := range m.Columns {
				sym := ""
				switch {
				case row.Skipped != "":
					sym = "–"
				case i < len(row.Cells):
					sym = strings.TrimSpace(row.Cells[i].Symbol())
				}
				b.WriteString(" | " + sym)
			}
			b.WriteString(" |\n")
		}
		b.WriteString("\n")
	}
	tally := m.Tally
	if m.Interrupted {
		tally += "  (interrupted)"
	}
	fmt.Fprintf(&b, "%s\n\n", mdText(tally))
	b.WriteString(gateSummary(res, cov))
	var skipped []matrix.Row
	for _, row := range m.Rows {
		if row.Skipped != "" {
			skipped = append(skipped, row)
		}
	}
	for _, row := range skipped {
		fmt.Fprintf(&b, "– %s: skipped: %s\n\n", mdText(row.Name), mdText(row.Skipped))
	}
	if len(cells) == 0 {
		return b.String()
	}
	head := "| cell | status | why |\n|---|---|---|\n"
	if res != nil {
		head = "| cell | status | baseline | why |\n|---|---|---|---|\n"
	}
	b.WriteString(head)
	for _, c := range cells {
		if res != nil {
			known := "new"
			if c.Status != matrix.Fail {
				known = ""
			} else if c.Known {
				known = "known"
			}
			fmt.Fprintf(&b, "| %s | %s %s | %s | %s |\n", mdText(c.Label), c.Status.Symbol(), c.Status, known, mdText(reporters.OneLine(c.Reason, 200)))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s %s | %s |\n", mdText(c.Label), c.Status.Symbol(), c.Status, mdText(reporters.OneLine(c.Reason, 200)))
	}
	b.WriteString("\n")
	for _, c := range cells {
		if len(c.Details) == 0 && len(c.Evidence) == 0 {
			continue
		}
		text := reporters.EscapeText(c.Reason) + "\n"
		if len(c.Evidence) > 0 {
			text += "evidence: " + reporters.EscapeText(c.Evidence.String()) + "\n"
		}
		for _, d := range c.Details {
			text += "    " + reporters.EscapeText(d) + "\n"
		}
		fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
		fmt.Fprintf(&b, "<details><summary><b>%s</b>: %s</summary>\n\n%stext\n%s%s\n\n</details>\n\n",
			mdText(c.Label), mdText(reporters.OneLine(c.Reason, 200)), fence, text, fence)
	}
	return b.String()
}
