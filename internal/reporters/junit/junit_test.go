package junit

import (
	"bytes"
	"encoding/xml"
	"errors"
	"strings"
	"testing"

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
