package terminal

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/reporters"
)

// WriteMatrix prints a check's or a sweep's matrix (matrix.Source): the lead cell (sweep's run
// 0) and the preamble (check's diagnoses, the values a sweep carried), a row per tool or call
// and a column per check or fault (✓ pass, ✗ fail, ⚠ protocol deviation, – skipped or not
// faulted, ? inconclusive), then every row skipped and every cell that is not ✓ explained with
// its evidence, and the tally.
func WriteMatrix(w io.Writer, m matrix.Matrix, color bool) {
	m = escaped(m)
	st := newStyles(w, color)
	if c := m.Lead; c != nil {
		fmt.Fprintf(w, "%s: %s %s\n", c.Label, symbolStyle(st, c.Status).Render(c.Status.Symbol()), c.Reason)
		for _, d := range c.Details {
			fmt.Fprintln(w, "    "+d)
		}
	}
	for _, l := range m.Preamble {
		switch l.Tone {
		case matrix.Warning:
			fmt.Fprintln(w, st.skip.Render(l.Text))
		case matrix.Muted:
			fmt.Fprintln(w, st.dim.Render(l.Text))
		default:
			fmt.Fprintln(w, l.Text)
		}
	}
	if m.Lead != nil || len(m.Preamble) > 0 {
		fmt.Fprintln(w)
	}
	writeTable(w, st, m)
	n := notes{w: w}
	for _, row := range m.Rows {
		if row.Skipped != "" {
			n.add(fmt.Sprintf("%s %s: skipped: %s", symbolStyle(st, matrix.Skip).Render("–"), row.Name, row.Skipped), row.Details)
			continue
		}
		for _, c := range row.Cells {
			if c.Status == matrix.Pass || c.Placeholder != "" {
				continue
			}
			head := fmt.Sprintf("%s %s: %s", symbolStyle(st, c.Status).Render(c.Status.Symbol()), c.Label, c.Reason)
			if len(c.Evidence) > 0 {
				head += st.dim.Render(" [evidence: " + reporters.Escape(c.Evidence.String()) + "]")
			}
			n.add(head, c.Details)
		}
	}
	writeTally(w, st, m.Tally, m.Interrupted, m.Failed)
}

// writeTable writes the table of a matrix: a header of corner and one column per id, then a row
// per name (a long name clipped: one name must not push every column off-screen; the lines
// below and the JSON report have it whole) with one symbol per cell, each styled by its status
// and padded to its column's width. A row may have fewer cells than there are columns (a
// battery interrupted in the middle of a tool).
func writeTable(w io.Writer, st styles, m matrix.Matrix) {
	names := make([]string, len(m.Rows))
	width := len(m.Corner)
	for i, row := range m.Rows {
		names[i] = reporters.Clip(row.Name, reporters.NameWidth)
		width = max(width, utf8.RuneCountInString(names[i]))
	}
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "%-*s", width+2, m.Corner)
	for _, id := range m.Columns {
		fmt.Fprintf(&hdr, "%-*s", len(id)+2, id)
	}
	fmt.Fprintln(w, st.bold.Render(strings.TrimRight(hdr.String(), " ")))
	for r, row := range m.Rows {
		var line strings.Builder
		fmt.Fprintf(&line, "%-*s", width+2, names[r])
		for i, c := range row.Cells {
			pad := len(m.Columns[i]) + 1
			if i == len(row.Cells)-1 {
				pad = 0
			}
			line.WriteString(symbolStyle(st, c.Status).Render(c.Symbol()) + strings.Repeat(" ", pad))
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

// escaped is m with every text that came from outside escaped (tool names, reasons, details,
// diagnoses): a server names its tools, and report merge reads a matrix from a file that may
// come from anyone, so none of it may drive the terminal or a CI log.
func escaped(m matrix.Matrix) matrix.Matrix {
	cell := func(c matrix.Cell) matrix.Cell {
		c.Label, c.Reason = reporters.Escape(c.Label), reporters.EscapeText(c.Reason)
		c.Details = escapeAll(c.Details)
		return c
	}
	if m.Lead != nil {
		lead := cell(*m.Lead)
		m.Lead = &lead
	}
	m.Columns = slices.Clone(m.Columns)
	for i, c := range m.Columns {
		m.Columns[i] = reporters.Escape(c)
	}
	m.Preamble = slices.Clone(m.Preamble)
	for i := range m.Preamble {
		m.Preamble[i].Text = reporters.EscapeText(m.Preamble[i].Text)
	}
	m.Rows = slices.Clone(m.Rows)
	for i := range m.Rows {
		r := &m.Rows[i]
		r.Name, r.Skipped, r.Details = reporters.Escape(r.Name), reporters.EscapeText(r.Skipped), escapeAll(r.Details)
		r.Cells = slices.Clone(r.Cells)
		for j := range r.Cells {
			r.Cells[j] = cell(r.Cells[j])
		}
	}
	return m
}

func escapeAll(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = reporters.EscapeText(l)
	}
	return out
}
