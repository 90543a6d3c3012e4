package terminal

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/idemtest/idemtest/internal/matrix"
)

// mark is one cell of a matrix: its status, which styles it, and the symbol shown.
type mark struct {
	status matrix.Status
	symbol string
}

// writeMatrix writes the table of check's and sweep's matrices: a header of corner and one
// column per id, then a row per name with one symbol per cell, each styled by its status and
// padded to its column's width. A row may have fewer cells than there are columns (a battery
// interrupted in the middle of a tool).
func writeMatrix(w io.Writer, st styles, corner string, ids, names []string, rows [][]mark) {
	width := len(corner)
	for _, n := range names {
		width = max(width, utf8.RuneCountInString(n))
	}
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "%-*s", width+2, corner)
	for _, id := range ids {
		fmt.Fprintf(&hdr, "%-*s", len(id)+2, id)
	}
	fmt.Fprintln(w, st.bold.Render(strings.TrimRight(hdr.String(), " ")))
	for r, name := range names {
		var line strings.Builder
		fmt.Fprintf(&line, "%-*s", width+2, name)
		for i, m := range rows[r] {
			pad := len(ids[i]) + 1
			if i == len(rows[r])-1 {
				pad = 0
			}
			line.WriteString(symbolStyle(st, m.status).Render(m.symbol) + strings.Repeat(" ", pad))
		}
		fmt.Fprintln(w, strings.TrimRight(line.String(), " "))
	}
}

// notes writes the lines under a matrix that explain its cells, after one blank line.
type notes struct {
	w       io.Writer
	started bool
}

// add writes a cell's explanation: its head line, then each detail indented.
func (n *notes) add(head string, details []string) {
	if !n.started {
		fmt.Fprintln(n.w)
		n.started = true
	}
	fmt.Fprintln(n.w, head)
	for _, d := range details {
		fmt.Fprintln(n.w, "    "+d)
	}
}

// writeTally writes a matrix's closing line after a blank line: red when the matrix failed.
func writeTally(w io.Writer, st styles, tally string, interrupted, failed bool) {
	fmt.Fprintln(w)
	if interrupted {
		tally += "  (interrupted)"
	}
	if failed {
		fmt.Fprintln(w, st.fail.Render(tally))
	} else {
		fmt.Fprintln(w, st.pass.Render(tally))
	}
}

func symbolStyle(st styles, s matrix.Status) interface{ Render(...string) string } {
	switch s {
	case matrix.Pass:
		return st.pass
	case matrix.Fail:
		return st.fail
	case matrix.Warn, matrix.Inconclusive:
		return st.skip
	}
	return st.dim
}
