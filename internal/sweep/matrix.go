package sweep

import (
	"fmt"
	"strings"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/plural"
)

// Matrix is the sweep as every reporter shows it: run 0, the values carried over and what every
// run is compared on above; a row per call of the trace and a column per fault, a read-only
// call's cells "–" (not faulted) and a run the interrupt came before blank.
func (r *Report) Matrix() matrix.Matrix {
	m := matrix.Matrix{Title: "idemtest sweep " + r.Trace, Corner: "CALL", Columns: r.Faults, Suite: r.Trace,
		Start: r.Start, Duration: r.Duration, Interrupted: r.Interrupted, Failed: r.Failed()}
	if b := r.Baseline; b != nil {
		lead := r.cell(b, "run 0 (no fault)")
		lead.Case, lead.Class = "run 0: the trace replayed without a fault", r.Endpoint
		m.Lead = &lead
	}
	for _, c := range r.Carried {
		m.Preamble = append(m.Preamble, matrix.Line{Text: fmt.Sprintf("carried: call %d's answer %s → call %d's argument %s", c.From, c.Path, c.To, c.Arg)})
	}
	m.Preamble = append(m.Preamble, matrix.Line{Text: "evidence: " + strings.Join(r.Evidence, ", "), Tone: matrix.Muted})
	cells := map[string]*Cell{}
	for _, c := range r.Cells {
		cells[fmt.Sprint(c.Seq, c.Fault)] = c
	}
	counts := map[matrix.Status]int{}
	for _, call := range r.Calls {
		row := matrix.Row{Name: fmt.Sprintf("%d %s", call.Seq, call.Tool)}
		for _, f := range r.Faults {
			c := cells[fmt.Sprint(call.Seq, f)]
			switch {
			case c != nil:
				counts[c.Status]++
				row.Cells = append(row.Cells, r.cell(c, fmt.Sprintf("call %d %s %s", c.Seq, c.Tool, c.Fault)))
			case call.Mutating:
				row.Cells = append(row.Cells, matrix.Cell{Column: f, Status: matrix.Skip, Placeholder: " "}) // not reached (interrupted)
			default:
				row.Cells = append(row.Cells, matrix.Cell{Column: f, Status: matrix.Skip, Placeholder: "–"}) // read-only: not faulted
			}
		}
		m.Rows = append(m.Rows, row)
	}
	// The time goes to standard error (see cmd): the table is the same on every run.
	m.Tally = fmt.Sprintf("%s, %s: %d ✓ %d ✗ %d ?",
		plural.Count(len(r.Calls), "call"), plural.Count(len(r.Cells), "faulty run"), counts[matrix.Pass], counts[matrix.Fail], counts[matrix.Inconclusive])
	return m
}

// cell is one run of the sweep as a matrix's cell, labelled for the line that explains it.
func (r *Report) cell(c *Cell, label string) matrix.Cell {
	return matrix.Cell{Column: c.Fault, Label: label,
		Case: fmt.Sprintf("call %d %s: %s", c.Seq, c.Tool, c.Fault), Class: r.Endpoint + "." + c.Tool,
		Status: c.Status, Reason: c.Reason, Details: c.Details, Duration: c.Duration,
		Known: r.Regressions.IsKnown(baseline.SweepSubject(c.Seq, c.Tool, c.Fault))}
}
