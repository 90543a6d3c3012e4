package terminal

import (
	"fmt"
	"io"

	"github.com/idemtest/idemtest/internal/check"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/reporters"
)

// CheckMatrix prints the battery's matrix: the diagnoses, a row per tool and a column per check
// (✓ pass, ✗ fail, ⚠ protocol deviation, – skipped, ? inconclusive), then every cell that is not
// ✓ explained with its evidence, and a summary line.
func CheckMatrix(w io.Writer, rep *check.Report, color bool) {
	st := newStyles(w, color)
	for _, d := range rep.Diagnoses {
		fmt.Fprintln(w, st.skip.Render("diagnosis: "+d))
	}
	if len(rep.Diagnoses) > 0 {
		fmt.Fprintln(w)
	}
	// A long name is clipped in the matrix (one name must not push every column off-screen);
	// the lines below it and the JSON report have it whole.
	counts := map[matrix.Status]int{}
	names, rows := make([]string, len(rep.Rows)), make([][]mark, len(rep.Rows))
	for i, row := range rep.Rows {
		names[i] = reporters.Clip(row.Tool, reporters.NameWidth)
		for _, c := range row.Cells {
			counts[c.Status]++
			rows[i] = append(rows[i], mark{c.Status, c.Status.Symbol()})
		}
	}
	writeMatrix(w, st, "TOOL", rep.Checks, names, rows)
	n := notes{w: w}
	for _, row := range rep.Rows {
		if row.Skipped != "" {
			var details []string
			if len(row.Cells) > 0 {
				details = row.Cells[0].Details // what the services wrote during the plain call
			}
			n.add(fmt.Sprintf("%s %s: skipped: %s", symbolStyle(st, matrix.Skip).Render("–"), row.Tool, row.Skipped), details)
			continue
		}
		for _, c := range row.Cells {
			if c.Status == matrix.Pass {
				continue
			}
			head := fmt.Sprintf("%s %s %s: %s", symbolStyle(st, c.Status).Render(c.Status.Symbol()), row.Tool, c.Check, c.Reason)
			if c.EvidenceText != "" {
				head += st.dim.Render(" [evidence: " + c.EvidenceText + "]")
			}
			n.add(head, c.Details)
		}
	}
	writeTally(w, st, fmt.Sprintf("%s, %s: %d ✓ %d ✗ %d ⚠ %d – %d ?  %s",
		plural.Count(len(rep.Rows), "tool"), plural.Count(len(rep.Checks), "check"), counts[matrix.Pass], counts[matrix.Fail], counts[matrix.Warn], counts[matrix.Skip], counts[matrix.Inconclusive],
		rep.Duration.Round(1e6)), rep.Interrupted, rep.Failed())
}
