package scenario

import (
	"context"
	"errors"
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
			if got := hasTopLevelKey([]byte(tt.text), "steps"); got != tt.want {
				t.Errorf("hasTopLevelKey(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

// TestDirectoryWalkSkipsLargeYAML: a large YAML file that is not a scenario (100,000 keys) is
// left alone by a directory walk; the check reads its lines once instead of decoding it (that
// took a minute).
func TestDirectoryWalkSkipsLargeYAML(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&b, "key%d: value%d\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "data.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte("name: s\nsteps:\n  - sleep: 1ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, errs := scenarioFiles(context.Background(), []string{dir})
	if len(errs) > 0 || len(files) != 1 || filepath.Base(files[0]) != "s.yaml" {
		t.Errorf("scenarioFiles = %v, %v; want only s.yaml", files, errs)
	}
}

func TestLoadContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := LoadContext(ctx, []string{"testdata"}, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("LoadContext with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestYAMLErrorNearTheMistake: the parser reports where the enclosing block began (the
// steps: line); the error points at the line that breaks it, found by parsing prefixes.
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
			_, err := Load([]string{path}, Options{})
			want := fmt.Sprintf("%s:%d:4: invalid YAML", path, n+3)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error = %v, want it to start with %s", err, want)
			}
		})
	}
}
