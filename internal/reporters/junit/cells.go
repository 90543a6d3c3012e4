package junit

import (
	"fmt"
	"io"
	"strings"

	"github.com/idemtest/idemtest/internal/matrix"
)

// KnownFailure is the skipped message of a failure the baseline lists: JUnit has no "known"
// state, and a skip is what CI parsers show without failing the build.
const KnownFailure = "known failure (baseline)"

// WriteMatrix writes a check's or a sweep's matrix (matrix.Source) as JUnit XML: a testsuite per
// row (check: per tool, a testcase per check), or one testsuite for the whole matrix when it
// names one (sweep: a testcase for run 0 and one per call and fault, named "call 3
// issue_refund: lost-response"). ✗ is a failure, – and ? are skipped (with why), ⚠ passes with
// its deviation in system-out.
func WriteMatrix(w io.Writer, m matrix.Matrix) error {
	root := JUnitTestSuites{Name: clean(m.Title), Time: seconds(m.Duration)}
	stamp := m.Start.UTC().Format("2006-01-02T15:04:05")
	if m.Suite != "" {
		suite := JUnitTestSuite{Name: clean(m.Suite), Timestamp: stamp, Time: seconds(m.Duration)}
		if m.Lead != nil {
			suite.addCell(*m.Lead)
		}
		for _, row := range m.Rows {
			for _, c := range row.Cells {
				suite.addCell(c)
			}
		}
		root.add(suite)
		return encode(w, root)
	}
	for _, row := range m.Rows {
		suite := JUnitTestSuite{Name: clean(row.Name), Timestamp: stamp}
		var total float64
		for _, c := range row.Cells {
			total += c.Duration.Seconds()
			suite.addCell(c)
		}
		suite.Time = fmt.Sprintf("%.3f", total)
		root.add(suite)
	}
	return encode(w, root)
}

// addCell adds a cell's testcase, filled from its status: ✗ is a failure (typed by its column)
// unless the baseline knows it (skipped, KnownFailure), – and ? are skipped with why, ✓ and ⚠
// pass with their reason in system-out. A placeholder (nothing ran) is no testcase.
func (s *JUnitTestSuite) addCell(c matrix.Cell) {
	if c.Placeholder != "" {
		return
	}
	tc := JUnitTestCase{Name: clean(c.Case), Classname: clean(c.Class), Time: seconds(c.Duration)}
	text := clean(strings.Join(append([]string{c.Reason}, c.Details...), "\n"))
	switch {
	case c.Status == matrix.Fail && c.Known:
		tc.Skipped = &JUnitMessage{Message: KnownFailure, Text: text}
		s.Skipped++
	case c.Status == matrix.Fail:
		tc.Failure = &JUnitMessage{Message: clean(c.Reason), Type: c.Column, Text: text}
		s.Failures++
	case c.Status == matrix.Skip || c.Status == matrix.Inconclusive:
		tc.Skipped = &JUnitMessage{Message: clean(c.Status.Symbol() + " " + c.Reason)}
		s.Skipped++
	default:
		tc.SystemOut = text
	}
	s.Tests++
	s.Cases = append(s.Cases, tc)
}
