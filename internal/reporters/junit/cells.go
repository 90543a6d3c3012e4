package junit

import (
	"fmt"
	"io"
	"strings"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/check"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/sweep"
)

// KnownFailure is the skipped message of a failure the baseline lists: JUnit has no "known"
// state, and a skip is what CI parsers show without failing the build.
const KnownFailure = "known failure (baseline)"

// WriteCheck writes the battery as JUnit XML: a testsuite per tool, a testcase per check.
// ✗ is a failure, – and ? are skipped (with why), ⚠ passes with its deviation in system-out.
func WriteCheck(w io.Writer, rep *check.Report) error {
	root := JUnitTestSuites{Name: "idemtest check " + rep.Endpoint, Time: seconds(rep.Duration)}
	for _, row := range rep.Rows {
		suite := JUnitTestSuite{Name: clean(row.Tool), Timestamp: rep.Start.UTC().Format("2006-01-02T15:04:05")}
		var total float64
		for _, c := range row.Cells {
			total += c.Duration.Seconds()
			suite.addCell(JUnitTestCase{Name: c.Check, Classname: clean(rep.Endpoint + "." + row.Tool), Time: seconds(c.Duration)},
				c.Status, c.Reason, c.Details, c.Check, rep.Regressions.IsKnown(baseline.CheckSubject(row.Tool, c.Check)))
		}
		suite.Time = fmt.Sprintf("%.3f", total)
		root.add(suite)
	}
	return encode(w, root)
}

// WriteSweep writes a sweep as JUnit XML: one testsuite, a testcase for run 0 and one per call
// and fault (named "call 3 issue_refund: lost-response"). ✗ is a failure, ? is skipped with why.
func WriteSweep(w io.Writer, rep *sweep.Report) error {
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
		known := rep.Regressions.IsKnown(baseline.SweepSubject(c.Seq, c.Tool, c.Fault))
		suite.addCell(JUnitTestCase{Name: clean(name), Classname: clean(class), Time: seconds(c.Duration)}, c.Status, c.Reason, c.Details, c.Fault, known)
	}
	root.add(suite)
	return encode(w, root)
}

// addCell adds a check or sweep testcase, filled from a cell's status: ✗ is a failure (typed by
// failType) unless the baseline knows it (known: skipped, KnownFailure), – and ? are skipped
// with why, ✓ and ⚠ pass with their reason in system-out.
func (s *JUnitTestSuite) addCell(tc JUnitTestCase, status matrix.Status, reason string, details []string, failType string, known bool) {
	text := clean(strings.Join(append([]string{reason}, details...), "\n"))
	switch {
	case status == matrix.Fail && known:
		tc.Skipped = &JUnitMessage{Message: KnownFailure, Text: text}
		s.Skipped++
	case status == matrix.Fail:
		tc.Failure = &JUnitMessage{Message: clean(reason), Type: failType, Text: text}
		s.Failures++
	case status == matrix.Skip || status == matrix.Inconclusive:
		tc.Skipped = &JUnitMessage{Message: clean(status.Symbol() + " " + reason)}
		s.Skipped++
	default:
		tc.SystemOut = text
	}
	s.Tests++
	s.Cases = append(s.Cases, tc)
}
