package junit

import (
	"bytes"
	"encoding/xml"
	"errors"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/reporters/reporterstest"
	"github.com/idemtest/idemtest/internal/result"
)

func TestJUnitGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, reporterstest.SampleReport()); err != nil {
		t.Fatal(err)
	}
	reporterstest.Golden(t, "report.junit.xml", buf.Bytes())
	var doc JUnitTestSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("the report is not valid XML: %v", err)
	}
	if doc.Tests != 5 || doc.Failures != 2 || doc.Errors != 1 || skippedOf(doc) != 1 || len(doc.Suites) != 4 {
		t.Errorf("counts: %+v", doc)
	}
}

// TestRecordedGolden renders every recorded run, valid against the schema.
func TestRecordedGolden(t *testing.T) {
	for _, rc := range reporterstest.Recordings {
		base := strings.TrimSuffix(rc.Name, ".json")
		t.Run(base, func(t *testing.T) {
			var junit bytes.Buffer
			if err := Write(&junit, reporterstest.Recorded(t, rc.Name)); err != nil {
				t.Fatal(err)
			}
			reporterstest.Golden(t, base+".junit.xml", junit.Bytes())
			reporterstest.ValidateJUnit(t, junit.Bytes())
		})
	}
}

func TestCheckGolden(t *testing.T) {
	var junit bytes.Buffer
	if err := WriteMatrix(&junit, reporterstest.RecordedCheck(t).Matrix()); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(junit.Bytes(), new(JUnitTestSuites)); err != nil {
		t.Fatalf("JUnit is not valid XML: %v", err)
	}
	reporterstest.Golden(t, "check.junit.xml", junit.Bytes())
}

func TestRunLevelError(t *testing.T) {
	rep := &result.Report{Start: reporterstest.T0, Err: errors.New("service refunds was not ready within 1s")}
	var buf bytes.Buffer
	if err := Write(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `errors="1"`) || !strings.Contains(buf.String(), "not ready within 1s") {
		t.Errorf("run-level error missing from JUnit:\n%s", buf.String())
	}
}

// TestInterrupted: a scenario the interrupt stopped is neither passed nor failed, but skipped
// (the recorded run.interrupted.json: one scenario finished, one cut short in its second trial
// with its call in flight, one never started).
func TestInterrupted(t *testing.T) {
	var xmlOut bytes.Buffer
	if err := Write(&xmlOut, reporterstest.Recorded(t, "run.interrupted.json")); err != nil {
		t.Fatal(err)
	}
	var doc JUnitTestSuites
	if err := xml.Unmarshal(xmlOut.Bytes(), &doc); err != nil {
		t.Fatalf("the report is not valid XML: %v", err)
	}
	if doc.Tests != 3 || doc.Failures != 0 || doc.Errors != 0 || skippedOf(doc) != 2 {
		t.Errorf("junit counts: %+v", doc)
	}
}

// TestMatrixCases: a matrix's cells as test cases: a ✗ the baseline knows is skipped as a known
// failure and fails nothing, a new ✗ fails typed by its column, ? is skipped with why, and a
// placeholder (nothing ran) is no test case; one suite when the matrix names one.
func TestMatrixCases(t *testing.T) {
	cell := func(col string, st matrix.Status, known bool) matrix.Cell {
		return matrix.Cell{Column: col, Case: col, Class: "refunds.issue_refund", Status: st, Reason: "why " + col, Known: known}
	}
	m := matrix.Matrix{Title: "idemtest check refunds", Columns: []string{"replay", "concurrent", "expiry", "annotations"}, Start: reporterstest.T0,
		Rows: []matrix.Row{{Name: "issue_refund", Cells: []matrix.Cell{
			cell("replay", matrix.Fail, true), cell("concurrent", matrix.Fail, false), cell("expiry", matrix.Inconclusive, false),
			{Column: "annotations", Status: matrix.Skip, Placeholder: " "},
		}}}}
	for _, suite := range []string{"", "agent.jsonl"} {
		m.Suite = suite
		var buf bytes.Buffer
		if err := WriteMatrix(&buf, m); err != nil {
			t.Fatal(err)
		}
		var doc JUnitTestSuites
		if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Suites) != 1 || doc.Tests != 3 || doc.Failures != 1 || skippedOf(doc) != 2 {
			t.Fatalf("suite %q: counts %+v", suite, doc)
		}
		cases := doc.Suites[0].Cases
		if s := cases[0].Skipped; s == nil || s.Message != KnownFailure || cases[0].Failure != nil {
			t.Errorf("suite %q: the known ✗ is %+v", suite, cases[0])
		}
		if f := cases[1].Failure; f == nil || f.Type != "concurrent" || f.Message != "why concurrent" {
			t.Errorf("suite %q: the new ✗ is %+v", suite, cases[1])
		}
		if s := cases[2].Skipped; s == nil || s.Message != "? why expiry" {
			t.Errorf("suite %q: the ? is %+v", suite, cases[2])
		}
	}
}
