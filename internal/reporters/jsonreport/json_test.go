package jsonreport_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/check"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/reporters/reporterstest"
	"github.com/idemtest/idemtest/internal/result"
)

func TestJSONGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := jsonreport.Write(&buf, reporterstest.SampleReport(), "v0.0.0-test"); err != nil {
		t.Fatal(err)
	}
	reporterstest.Golden(t, "report.json", buf.Bytes())
	var back jsonreport.JSONReport
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Summary.Failed != 2 || back.Scenarios[1].FailedTrial != 3 || back.Scenarios[1].History[1].Calls[2].Key != "bbbbbbbbbbbb-0" {
		t.Errorf("round trip: %+v", back.Summary)
	}
}

// TestRecordedGolden checks that the JSON report reads back into the run it describes: written
// again, it is the recording.
func TestRecordedGolden(t *testing.T) {
	for _, rc := range reporterstest.Recordings {
		t.Run(strings.TrimSuffix(rc.Name, ".json"), func(t *testing.T) {
			var js bytes.Buffer
			if err := jsonreport.Write(&js, reporterstest.Recorded(t, rc.Name), "dev"); err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(reporterstest.Testdata(rc.Name))
			if !bytes.Equal(js.Bytes(), want) {
				t.Errorf("the JSON report does not read back into the same run:\n%s", lineDiff(string(want), js.String()))
			}
		})
	}
}

func TestCheckRoundTrip(t *testing.T) {
	rep := reporterstest.RecordedCheck(t)
	var js bytes.Buffer
	if err := jsonreport.WriteCheck(&js, rep, "test"); err != nil {
		t.Fatal(err)
	}
	var back check.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Rows) != len(rep.Rows) {
		t.Fatalf("JSON does not round-trip: %v", err)
	}
}

// TestInterrupted: a scenario the interrupt stopped is neither passed nor failed (the recorded
// run.interrupted.json: one scenario finished, one cut short in its second trial with its call
// in flight, one never started).
func TestInterrupted(t *testing.T) {
	var js bytes.Buffer
	if err := jsonreport.Write(&js, reporterstest.Recorded(t, "run.interrupted.json"), "dev"); err != nil {
		t.Fatal(err)
	}
	var back jsonreport.JSONReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !back.Interrupted || back.Summary.Passed != 1 || back.Summary.Failed != 0 || back.Summary.Interrupted != 2 ||
		back.Scenarios[1].Status != result.Interrupted || len(back.Scenarios[1].History) != 2 || !back.Scenarios[1].History[1].Cut {
		t.Errorf("json: %+v", back.Summary)
	}
}

// lineDiff shows the first line where two texts differ.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n- %.200s\n+ %.200s", i+1, al[i], bl[i])
		}
	}
	return "lengths differ"
}

// TestJSONFieldsDocumented: every field name the recorded reports hold is in the table of the
// JSON report in docs/reports.md, so the documented format cannot drift from the written one.
func TestJSONFieldsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "reports.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(doc), "\n## The JSON report\n")
	if !found {
		t.Fatal(`docs/reports.md has no section "## The JSON report"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	fields := map[string]bool{}
	var walk func(v any, inAnswer bool)
	walk = func(v any, inAnswer bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if !inAnswer {
					fields[k] = true
				}
				// Arguments, answers and service output are the server's and the scenario's own.
				walk(e, inAnswer || k == "arguments" || k == "answer" || k == "service_output")
			}
		case []any:
			for _, e := range x {
				walk(e, inAnswer)
			}
		}
	}
	for _, rc := range reporterstest.Recordings {
		b, err := os.ReadFile(reporterstest.Testdata(rc.Name))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		walk(v, false)
	}
	for f := range fields {
		if !strings.Contains(section, "`"+f+"`") && !strings.Contains(section, "`"+f+"[]") && !strings.Contains(section, "."+f+"[]`") {
			t.Errorf("the JSON report's field %q is not in the table of docs/reports.md (## The JSON report)", f)
		}
	}
}
