package probe

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/scenario"
)

func TestFileProbe(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("state.json", `{"refunds": [{"id": "re_1"}, {"id": "re_2"}]}`)
	write("ledger.jsonl", "{\"id\":\"re_1\"}\n\n{\"id\":\"re_2\"}\n")
	write("broken.jsonl", "{\"id\":\"re_1\"}\nnot json\n")
	write("broken.json", `{"refunds": [`)
	mkfifo(t, filepath.Join(dir, "pipe"))
	for _, tt := range []struct {
		name, path, format string
		optional           bool
		want               string // the value as JSON
		err                string
	}{
		{name: "json document", path: "state.json", want: `{"refunds":[{"id":"re_1"},{"id":"re_2"}]}`},
		{name: "json lines, blank skipped", path: "ledger.jsonl", format: scenario.FileJSONLines, want: `[{"id":"re_1"},{"id":"re_2"}]`},
		{name: "absolute path", path: filepath.Join(dir, "state.json"), want: `{"refunds":[{"id":"re_1"},{"id":"re_2"}]}`},
		{name: "path from the template env", path: "{{ session }}.json", want: `{"refunds":[{"id":"re_1"},{"id":"re_2"}]}`},
		{name: "missing is an error", path: "nope.json", err: "no such file"},
		{name: "missing and optional json", path: "nope.json", optional: true, want: `null`},
		{name: "missing and optional jsonl", path: "nope.jsonl", format: scenario.FileJSONLines, optional: true, want: `[]`},
		{name: "a line that is not json names its line", path: "broken.jsonl", format: scenario.FileJSONLines, err: "broken.jsonl:2 is not JSON"},
		{name: "broken document", path: "broken.json", err: "broken.json is not JSON"},
		{name: "a fifo is refused, not waited on", path: "pipe", err: "not a regular file"},
		{name: "a directory is refused", path: ".", err: "not a regular file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := assert.CompileTemplate(tt.path, assert.Env{"session": ""})
			if err != nil {
				t.Fatal(err)
			}
			format := tt.format
			if format == "" {
				format = scenario.FileJSON
			}
			fp := &scenario.FileProbe{Path: tmpl, Dir: dir, Format: format, Optional: tt.optional}
			v, err := evalFile(context.Background(), fp, map[string]any{"session": "state"})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(v)
			if string(got) != tt.want {
				t.Errorf("value = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestFileProbeCap(t *testing.T) {
	defer func(n int64) { MaxBytes = n }(MaxBytes)
	MaxBytes = 16
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.json"), []byte(`["a long enough document"]`), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl, _ := assert.CompileTemplate("big.json", assert.Env{})
	_, err := evalFile(context.Background(), &scenario.FileProbe{Path: tmpl, Dir: dir, Format: scenario.FileJSON}, nil)
	if err == nil || !strings.Contains(err.Error(), "a file probe reads at most") {
		t.Fatalf("err = %v, want the cap named", err)
	}
}
