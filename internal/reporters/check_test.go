package reporters

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/check"
)

// recordedCheck is the JSON report of a real battery (the reference server over MCP stdio, keys
// ignored), with its clock fixed.
func recordedCheck(t *testing.T) *check.Report {
	b, err := os.ReadFile(filepath.Join("testdata", "check.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep check.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	rep.Start, rep.Duration = t0, 1500*time.Millisecond
	for _, row := range rep.Rows {
		for _, c := range row.Cells {
			c.Duration = 20 * time.Millisecond
		}
	}
	return &rep
}

func TestCheckGolden(t *testing.T) {
	rep := recordedCheck(t)
	var txt, junit, js bytes.Buffer
	CheckMatrix(&txt, rep, false)
	if err := WriteCheckJUnit(&junit, rep); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(junit.Bytes(), new(JUnitTestSuites)); err != nil {
		t.Fatalf("JUnit is not valid XML: %v", err)
	}
	if err := WriteCheckJSON(&js, rep, "test"); err != nil {
		t.Fatal(err)
	}
	var back check.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Rows) != len(rep.Rows) {
		t.Fatalf("JSON does not round-trip: %v", err)
	}
	for name, got := range map[string][]byte{"check.txt": txt.Bytes(), "check.junit.xml": junit.Bytes()} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file (go test ./internal/reporters -update):\n%s", name, got)
		}
	}
}

// TestCheckMatrixClipsLongNames: one 300-character tool name leaves the matrix's columns where
// they were; the explanation below has the name whole.
func TestCheckMatrixClipsLongNames(t *testing.T) {
	rep := recordedCheck(t)
	long := strings.Repeat("a", 300)
	row := *rep.Rows[0]
	row.Tool = long
	rep.Rows = append(rep.Rows, &row)
	var txt bytes.Buffer
	CheckMatrix(&txt, rep, false)
	header, _, _ := strings.Cut(txt.String(), "\n")
	if col := strings.Index(header, rep.Checks[0]); col > NameWidth+2 {
		t.Errorf("the first check's column starts at %d:\n%s", col, txt.String())
	}
	if !strings.Contains(txt.String(), " "+long+" ") {
		t.Errorf("the explanations lack the whole name:\n%s", txt.String())
	}
}
