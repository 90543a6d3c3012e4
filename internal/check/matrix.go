package check

import (
	"fmt"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/plural"
)

// Matrix is the battery as every reporter shows it: the diagnoses above, a row per tool and a
// column per check, each ✗ the baseline lists marked known.
func (r *Report) Matrix() matrix.Matrix {
	m := matrix.Matrix{Title: "idemtest check " + r.Endpoint, Corner: "TOOL", Columns: r.Checks,
		Start: r.Start, Duration: r.Duration, Interrupted: r.Interrupted, Failed: r.Failed()}
	for _, d := range r.Diagnoses {
		m.Preamble = append(m.Preamble, matrix.Line{Text: "diagnosis: " + d, Tone: matrix.Warning})
	}
	counts := map[matrix.Status]int{}
	for _, row := range r.Rows {
		mr := matrix.Row{Name: row.Tool, Skipped: row.Skipped}
		if row.Skipped != "" && len(row.Cells) > 0 {
			mr.Details = row.Cells[0].Details // what the services wrote during the plain call
		}
		for _, c := range row.Cells {
			counts[c.Status]++
			mr.Cells = append(mr.Cells, matrix.Cell{Column: c.Check, Label: row.Tool + " " + c.Check,
				Case: c.Check, Class: r.Endpoint + "." + row.Tool,
				Status: c.Status, Reason: c.Reason, Details: c.Details, Evidence: c.Evidence, Duration: c.Duration,
				Known: r.Regressions.IsKnown(baseline.CheckSubject(row.Tool, c.Check))})
		}
		m.Rows = append(m.Rows, mr)
	}
	m.Tally = fmt.Sprintf("%s, %s: %d ✓ %d ✗ %d ⚠ %d – %d ?  %s",
		plural.Count(len(r.Rows), "tool"), plural.Count(len(r.Checks), "check"), counts[matrix.Pass], counts[matrix.Fail], counts[matrix.Warn], counts[matrix.Skip], counts[matrix.Inconclusive],
		r.Duration.Round(1e6))
	return m
}
