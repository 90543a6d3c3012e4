//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGoInstall installs idemtest by its module path, as the README's install line does
// (go install github.com/idemtest/idemtest@COMMIT), from a module that requires it and replaces
// it with this checkout: offline (GOPROXY=off, the dependencies from the module cache), into a
// temporary GOBIN; the binary it puts there answers --version.
func TestGoInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary; skipped under -short")
	}
	repo, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	gomod := "module example.com/installs\n\ngo 1.26\n\nrequire github.com/idemtest/idemtest v0.0.0\n\nreplace github.com/idemtest/idemtest => " + repo + "\n"
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(mod, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gobin := t.TempDir()
	env := append(os.Environ(), "GOBIN="+gobin, "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
	install := exec.Command("go", "install", "github.com/idemtest/idemtest")
	install.Dir, install.Env = mod, env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(gobin, "idemtest"), "--version").Output()
	if err != nil {
		t.Fatalf("idemtest --version: %v", err)
	}
	t.Logf("--version: %s", strings.TrimSpace(string(out)))
	if !regexp.MustCompile(`^idemtest \S+( \(commit [0-9a-f]+(, modified)?\))?\n$`).Match(out) {
		t.Errorf("--version printed %q", strings.TrimSpace(string(out)))
	}
}
