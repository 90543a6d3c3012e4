package terminal

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/reporters/reporterstest"
)

func TestCheckGolden(t *testing.T) {
	var txt bytes.Buffer
	WriteMatrix(&txt, reporterstest.RecordedCheck(t).Matrix(), false)
	reporterstest.Golden(t, "check.txt", txt.Bytes())
}

// TestCheckMatrixClipsLongNames: one 300-character tool name leaves the matrix's columns where
// they were; the explanation below has the name whole.
func TestCheckMatrixClipsLongNames(t *testing.T) {
	rep := reporterstest.RecordedCheck(t)
	long := strings.Repeat("a", 300)
	row := *rep.Rows[0]
	row.Tool = long
	rep.Rows = append(rep.Rows, &row)
	var txt bytes.Buffer
	WriteMatrix(&txt, rep.Matrix(), false)
	header, _, _ := strings.Cut(txt.String(), "\n")
	if col := strings.Index(header, rep.Checks[0]); col > reporters.NameWidth+2 {
		t.Errorf("the first check's column starts at %d:\n%s", col, txt.String())
	}
	if !strings.Contains(txt.String(), " "+long+" ") {
		t.Errorf("the explanations lack the whole name:\n%s", txt.String())
	}
}
