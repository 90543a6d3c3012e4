package load

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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

func TestScenariosCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Scenarios(ctx, []string{"testdata"}, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Scenarios with a cancelled context = %v, want context.Canceled", err)
	}
}
