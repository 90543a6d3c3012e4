package matrix

import "time"

// Matrix is one check or sweep report as every reporter renders it: a row per tool or call, a
// column per check or fault, each cell's status and why, and the lines around the table. The
// producers fill it (Source); a reporter imports this package, never a producer.
type Matrix struct {
	// Title names the report as a test report's root does: "idemtest check refunds".
	Title string
	// Corner heads the column of row names: TOOL, CALL.
	Corner string
	// Columns are the column ids, in order: the check ids, the faults.
	Columns []string
	// Lead is a cell judged before the table and shown above it, in no row (sweep's run 0);
	// nil when there is none.
	Lead *Cell
	// Preamble are the lines shown above the table, after Lead: check's diagnoses, the values
	// a sweep carried from answer to argument.
	Preamble []Line
	Rows     []Row
	// Tally is the closing line's text ("1 tool, 12 checks: 11 ✓ 1 ✗ 0 ⚠ 0 – 0 ?  4.1s").
	Tally string
	// Suite, when set, puts every cell (Lead first) in one test suite of that name, timed by
	// Duration, as a sweep is one run of one trace; when empty, each row is a suite of its own,
	// named by the row and timed by its cells, as check's tools are.
	Suite       string
	Start       time.Time
	Duration    time.Duration
	Interrupted bool
	Failed      bool
}

// Row is one tool or call of a matrix: its cells in the order of the columns (fewer when the
// report was interrupted in the middle of it).
type Row struct {
	// Name is the row's name in full; a terminal may clip it in the table.
	Name string
	// Skipped is why the whole row was left out ("" when it was judged), with Details what
	// explains it (what the services wrote).
	Skipped string
	Details []string
	Cells   []Cell
}

// Cell is one judged run: one check of a tool, one fault on a call.
type Cell struct {
	// Column is the cell's column id (the check or the fault): a test report's failure type.
	Column string
	// Label names the cell in a line that explains it: "issue_refund replay",
	// "call 3 issue_refund lost-response".
	Label string
	// Case and Class name the cell as a test report's test case: "replay" of class
	// "refunds.issue_refund".
	Case, Class string
	Status      Status
	// Reason is one line: why the cell is what it is.
	Reason string
	// Details explain a cell that is not ✓: the failure and the call history.
	Details  []string
	Evidence Evidences
	Duration time.Duration
	// Known marks a ✗ the baseline (--baseline) lists: it does not fail the build.
	Known bool
	// Placeholder, when set, is the symbol shown where nothing ran: "–" for a call that is not
	// faulted (read-only), " " for a run the interrupt came before. Such a cell is no test
	// case, is not counted and needs no explaining.
	Placeholder string
}

// Symbol is what the cell shows in the table.
func (c Cell) Symbol() string {
	if c.Placeholder != "" {
		return c.Placeholder
	}
	return c.Status.Symbol()
}

// Line is a line shown above a matrix, with its tone.
type Line struct {
	Text string
	Tone Tone
}

// Tone says how a line above a matrix reads.
type Tone int

// The tones of a line.
const (
	// Plain: a fact about the report (a value carried between calls).
	Plain Tone = iota
	// Muted: context a reader may skip (what every run is compared on).
	Muted
	// Warning: a finding about the whole server (a diagnosis).
	Warning
)

// Source is a report that a matrix shows: check's and sweep's.
type Source interface {
	Matrix() Matrix
}
