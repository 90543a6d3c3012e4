package reportfile

import (
	"os"
	"path/filepath"
	"strings"
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

func TestOpenSetDistinct(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	tests := []struct {
		name              string
		junit, json, html string
		wantErr           string
	}{
		{name: "the same path twice", junit: out, json: out, wantErr: "--junit " + out + " and --json " + out + " name one file"},
		{name: "one file by two spellings", json: out, html: filepath.Join(dir, ".", "sub", "..", "out.json"), wantErr: "name one file"},
		{name: "two files", junit: filepath.Join(dir, "a.xml"), json: out},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := OpenSet(tt.junit, tt.json, tt.html)
			set.Close()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
}
