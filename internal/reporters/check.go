package reporters

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/idemtest/idemtest/internal/check"
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
	width := len("TOOL")
	for _, row := range rep.Rows {
		width = max(width, utf8.RuneCountInString(Clip(row.Tool, NameWidth)))
	}
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "%-*s", width+2, "TOOL")
	for _, id := range rep.Checks {
		fmt.Fprintf(&hdr, "%-*s", len(id)+2, id)
	}
	fmt.Fprintln(w, st.bold.Render(strings.TrimRight(hdr.String(), " ")))
	counts := map[check.Status]int{}
	for _, row := range rep.Rows {
		var line strings.Builder
		fmt.Fprintf(&line, "%-*s", width+2, Clip(row.Tool, NameWidth))
		for i, c := range row.Cells {
			counts[c.Status]++
			sym := symbolStyle(st, c.Status).Render(c.Status.Symbol())
			pad := len(rep.Checks[i]) + 1
			if i == len(row.Cells)-1 {
				pad = 0
			}
			line.WriteString(sym + strings.Repeat(" ", pad))
		}
		fmt.Fprintln(w, strings.TrimRight(line.String(), " "))
	}
	explained := false
	for _, row := range rep.Rows {
		if row.Skipped != "" {
			if !explained {
				fmt.Fprintln(w)
				explained = true
			}
			fmt.Fprintf(w, "%s %s: skipped: %s\n", symbolStyle(st, check.Skip).Render("–"), row.Tool, row.Skipped)
			continue
		}
		for _, c := range row.Cells {
			if c.Status == check.Pass {
				continue
			}
			if !explained {
				fmt.Fprintln(w)
				explained = true
			}
			head := fmt.Sprintf("%s %s %s: %s", symbolStyle(st, c.Status).Render(c.Status.Symbol()), row.Tool, c.Check, c.Reason)
			if c.Evidence != "" {
				head += st.dim.Render(" [evidence: " + c.Evidence + "]")
			}
			fmt.Fprintln(w, head)
			for _, d := range c.Details {
				fmt.Fprintln(w, "    "+d)
			}
		}
	}
	fmt.Fprintln(w)
	summary := fmt.Sprintf("%d tools, %d checks: %d ✓ %d ✗ %d ⚠ %d – %d ?  %s",
		len(rep.Rows), len(rep.Checks), counts[check.Pass], counts[check.Fail], counts[check.Warn], counts[check.Skip], counts[check.Inconclusive],
		rep.Duration.Round(1e6))
	if rep.Interrupted {
		summary += "  (interrupted)"
	}
	if rep.Failed() {
		fmt.Fprintln(w, st.fail.Render(summary))
	} else {
		fmt.Fprintln(w, st.pass.Render(summary))
	}
}

func symbolStyle(st styles, s check.Status) interface{ Render(...string) string } {
	switch s {
	case check.Pass:
		return st.pass
	case check.Fail:
		return st.fail
	case check.Warn, check.Inconclusive:
		return st.skip
	}
	return st.dim
}

// WriteCheckJUnit writes the battery as JUnit XML: a testsuite per tool, a testcase per check.
// ✗ is a failure, – and ? are skipped (with why), ⚠ passes with its deviation in system-out.
func WriteCheckJUnit(w io.Writer, rep *check.Report) error {
	root := JUnitTestSuites{Name: "idemtest check " + rep.Endpoint, Time: seconds(rep.Duration)}
	for _, row := range rep.Rows {
		suite := JUnitTestSuite{Name: clean(row.Tool), Timestamp: rep.Start.UTC().Format("2006-01-02T15:04:05")}
		var total float64
		for _, c := range row.Cells {
			tc := JUnitTestCase{Name: c.Check, Classname: clean(rep.Endpoint + "." + row.Tool), Time: seconds(c.Duration)}
			total += c.Duration.Seconds()
			f, sk := cellCase(&tc, c.Status, c.Reason, c.Details, c.Check)
			suite.Failures, suite.Skipped = suite.Failures+f, suite.Skipped+sk
			suite.Tests++
			suite.Cases = append(suite.Cases, tc)
		}
		suite.Time = fmt.Sprintf("%.3f", total)
		root.Tests += suite.Tests
		root.Failures += suite.Failures
		root.Skipped += suite.Skipped
		root.Suites = append(root.Suites, suite)
	}
	return encodeJUnit(w, root)
}

// WriteCheckJSON writes the battery as JSON.
func WriteCheckJSON(w io.Writer, rep *check.Report, version string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Version string `json:"idemtest_version"`
		Failed  bool   `json:"failed"`
		*check.Report
	}{version, rep.Failed(), rep})
}
