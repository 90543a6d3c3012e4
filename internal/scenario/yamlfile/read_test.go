package yamlfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHasTopLevelKey(t *testing.T) {
	tests := []struct {
		name string
		text string
		want bool
	}{
		{"block mapping", "name: x\nsteps:\n  - sleep: 1ms\n", true},
		{"steps with a value on its line", "steps: []\n", true},
		{"quoted key", "\"steps\": []\n", true},
		{"single-quoted key", "'steps' : []\n", true},
		{"after comments and a document start", "# a scenario\n%YAML 1.2\n---\nname: x\nsteps:\n", true},
		{"document start with content", "--- name: x\n", false},
		{"indented top level", "  name: x\n  steps:\n    - sleep: 1ms\n", true},
		{"CRLF line ends", "name: x\r\nsteps:\r\n", true},
		{"byte order mark", "\ufeffsteps:\n  - sleep: 1ms\n", true},
		{"nested steps only", "jobs:\n  build:\n    steps:\n      - run: make\n", false},
		{"steps in a value", "name: steps: are here\n", false},
		{"a longer key", "steps_total: 3\nstepsy: 1\n", false},
		{"a top-level list", "- steps: 1\n- name: x\n", false},
		{"in a second document only", "name: a\n---\nsteps: []\n", false},
		{"flow mapping", "{name: x, steps: []}\n", true},
		{"flow mapping without it", "{name: x}\n", false},
		{"empty", "", false},
		{"compose file", "services:\n  db: {image: postgres}\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HasTopLevelKey([]byte(tt.text), "steps"); got != tt.want {
				t.Errorf("HasTopLevelKey(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

// TestYAMLErrorNearTheMistake: the parser reports the line where it noticed the mistake; the
// error points at the line that breaks it, found by parsing prefixes.
func TestYAMLErrorNearTheMistake(t *testing.T) {
	for _, n := range []int{1, 7, 300, 498} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			lines := []string{"name: x", "steps:"}
			for i := 0; i < n; i++ {
				lines = append(lines, "  - sleep: 1ms")
			}
			lines = append(lines, "   - sleep: 1ms") // one space too many
			for i := 0; i < 600; i++ {
				lines = append(lines, "  - sleep: 1ms")
			}
			path := filepath.Join(t.TempDir(), "s.yaml")
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			f, _ := Read(path, os.LookupEnv)
			want := fmt.Sprintf("%s:%d:4: invalid YAML", path, n+3)
			if len(f.Errs) == 0 || !strings.Contains(f.Errs.Error(), want) {
				t.Errorf("error = %v, want it to start with %s", f.Errs, want)
			}
		})
	}
}

// TestYAMLErrorNotAboveTheMistake: an unclosed "{" is noticed at the end of the file, and a
// multi-line value above the mistake fails to parse when cut in half; the error still points
// at the line of the mistake, not at the end and not inside that value.
func TestYAMLErrorNotAboveTheMistake(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		line      int
	}{
		{"unclosed brace noticed at the end", "endpoints:\n  e: {http: {url: \"http://127.0.0.1:1/{tool}\"}\nsteps:\n  - sleep: 1ms\n", 2},
		{"a flow list above the mistake", "name: x\nargs: [1,\n  2,\n  3]\nsteps:\n  - sleep: 1ms\n   - sleep: 1ms\n  - sleep: 1ms\n", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.yaml")
			if err := os.WriteFile(path, []byte(tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			f, _ := Read(path, os.LookupEnv)
			want := fmt.Sprintf("%s:%d:", path, tc.line)
			if len(f.Errs) == 0 || !strings.Contains(f.Errs.Error(), want) {
				t.Errorf("error = %v, want it at line %d", f.Errs, tc.line)
			}
		})
	}
}
