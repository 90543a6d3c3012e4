package terminal

import (
	"fmt"
	"io"
	"strings"

	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/sweep"
)

// SweepTable prints a sweep: run 0, the values carried over, a row per call of the trace and a
// column per fault (✓ same state as run 0, ✗ diverged, ? inconclusive, – a read-only call, not
// faulted), then every cell that is not ✓ explained, and a summary line.
func SweepTable(w io.Writer, rep *sweep.Report, color bool) {
	st := newStyles(w, color)
	if b := rep.Baseline; b != nil {
		fmt.Fprintf(w, "run 0 (no fault): %s %s\n", symbolStyle(st, b.Status).Render(b.Status.Symbol()), b.Reason)
		for _, d := range b.Details {
			fmt.Fprintln(w, "    "+d)
		}
	}
	for _, c := range rep.Carried {
		fmt.Fprintf(w, "carried: call %d's answer %s → call %d's argument %s\n", c.From, c.Path, c.To, c.Arg)
	}
	fmt.Fprintln(w, st.dim.Render("evidence: "+strings.Join(rep.Evidence, ", ")))
	fmt.Fprintln(w)
	cells := map[string]*sweep.Cell{}
	for _, c := range rep.Cells {
		cells[fmt.Sprint(c.Seq, c.Fault)] = c
	}
	counts := map[matrix.Status]int{}
	names, rows := make([]string, len(rep.Calls)), make([][]mark, len(rep.Calls))
	for i, call := range rep.Calls {
		names[i] = fmt.Sprintf("%d %s", call.Seq, call.Tool)
		for _, f := range rep.Faults {
			m := mark{matrix.Skip, "–"}
			if c := cells[fmt.Sprint(call.Seq, f)]; c != nil {
				m = mark{c.Status, c.Status.Symbol()}
				counts[c.Status]++
			} else if call.Mutating {
				m.symbol = " " // not reached (interrupted)
			}
			rows[i] = append(rows[i], m)
		}
	}
	writeMatrix(w, st, "CALL", rep.Faults, names, rows)
	n := notes{w: w}
	for _, c := range rep.Cells {
		if c.Status != matrix.Pass {
			n.add(fmt.Sprintf("%s call %d %s %s: %s", symbolStyle(st, c.Status).Render(c.Status.Symbol()), c.Seq, c.Tool, c.Fault, c.Reason), c.Details)
		}
	}
	// The time goes to standard error (see cmd): the table is the same on every run.
	writeTally(w, st, fmt.Sprintf("%s, %s: %d ✓ %d ✗ %d ?",
		plural.Count(len(rep.Calls), "call"), plural.Count(len(rep.Cells), "faulty run"), counts[matrix.Pass], counts[matrix.Fail], counts[matrix.Inconclusive]), rep.Interrupted, rep.Failed())
}
