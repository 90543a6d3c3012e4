package reportfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReportToStdout(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenSet("", "-", filepath.Join(dir, "r.html"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Stdout != "json" || r.JSON != nil || r.HTML == nil {
		t.Errorf("--json - opened %+v", r)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error("a file named - was created")
	}
}
