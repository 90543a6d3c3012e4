package reporters

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/idemtest/idemtest/internal/check"
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
	label := func(c sweep.CallInfo) string { return fmt.Sprintf("%d %s", c.Seq, c.Tool) }
	width := len("CALL")
	for _, c := range rep.Calls {
		width = max(width, utf8.RuneCountInString(label(c)))
	}
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "%-*s", width+2, "CALL")
	for _, f := range rep.Faults {
		fmt.Fprintf(&hdr, "%-*s", len(f)+2, f)
	}
	fmt.Fprintln(w, st.bold.Render(strings.TrimRight(hdr.String(), " ")))
	counts := map[check.Status]int{}
	for _, call := range rep.Calls {
		var line strings.Builder
		fmt.Fprintf(&line, "%-*s", width+2, label(call))
		for i, f := range rep.Faults {
			status, sym := check.Skip, "–"
			if c := cells[fmt.Sprint(call.Seq, f)]; c != nil {
				status, sym = c.Status, c.Status.Symbol()
				counts[status]++
			} else if call.Mutating {
				sym = " " // not reached (interrupted)
			}
			pad := len(f) + 1
			if i == len(rep.Faults)-1 {
				pad = 0
			}
			line.WriteString(symbolStyle(st, status).Render(sym) + strings.Repeat(" ", pad))
		}
		fmt.Fprintln(w, strings.TrimRight(line.String(), " "))
	}
	explained := false
	for _, c := range rep.Cells {
		if c.Status == check.Pass {
			continue
		}
		if !explained {
			fmt.Fprintln(w)
			explained = true
		}
		fmt.Fprintf(w, "%s call %d %s %s: %s\n", symbolStyle(st, c.Status).Render(c.Status.Symbol()), c.Seq, c.Tool, c.Fault, c.Reason)
		for _, d := range c.Details {
			fmt.Fprintln(w, "    "+d)
		}
	}
	fmt.Fprintln(w)
	// The time goes to standard error (see cmd): the table is the same on every run.
	summary := fmt.Sprintf("%d calls, %d faulty runs: %d ✓ %d ✗ %d ?",
		len(rep.Calls), len(rep.Cells), counts[check.Pass], counts[check.Fail], counts[check.Inconclusive])
	if rep.Interrupted {
		summary += "  (interrupted)"
	}
	if rep.Failed() {
		fmt.Fprintln(w, st.fail.Render(summary))
	} else {
		fmt.Fprintln(w, st.pass.Render(summary))
	}
}

// WriteSweepJUnit writes a sweep as JUnit XML: one testsuite, a testcase for run 0 and one per
// call and fault (named "call 3 issue_refund: lost-response"). ✗ is a failure, ? is skipped
// with why.
func WriteSweepJUnit(w io.Writer, rep *sweep.Report) error {
	root := JUnitTestSuites{Name: "idemtest sweep " + clean(rep.Trace), Time: seconds(rep.Duration)}
	suite := JUnitTestSuite{Name: clean(rep.Trace), Timestamp: rep.Start.UTC().Format("2006-01-02T15:04:05"), Time: seconds(rep.Duration)}
	cells := rep.Cells
	if rep.Baseline != nil {
		cells = append([]*sweep.Cell{rep.Baseline}, cells...)
	}
	for _, c := range cells {
		name, class := fmt.Sprintf("call %d %s: %s", c.Seq, c.Tool, c.Fault), rep.Endpoint+"."+c.Tool
		if c == rep.Baseline {
			name, class = "run 0: the trace replayed without a fault", rep.Endpoint
		}
		tc := JUnitTestCase{Name: clean(name), Classname: clean(class), Time: seconds(c.Duration)}
		f, sk := cellCase(&tc, c.Status, c.Reason, c.Details, c.Fault)
		suite.Failures, suite.Skipped = suite.Failures+f, suite.Skipped+sk
		suite.Tests++
		suite.Cases = append(suite.Cases, tc)
	}
	root.Tests, root.Failures, root.Skipped = suite.Tests, suite.Failures, suite.Skipped
	root.Suites = append(root.Suites, suite)
	return encodeJUnit(w, root)
}

// WriteSweepJSON writes a sweep as JSON.
func WriteSweepJSON(w io.Writer, rep *sweep.Report, version string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Version string `json:"idemtest_version"`
		Failed  bool   `json:"failed"`
		*sweep.Report
	}{version, rep.Failed(), rep})
}
