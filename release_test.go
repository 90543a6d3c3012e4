package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestReleaseBuild builds idemtest as the README's release recipe does (a version from the tag
// through -ldflags, the commit stamped from the checkout) and reads both back from --version.
func TestReleaseBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary; skipped under -short")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is needed to stamp the commit")
	}
	if fi, err := os.Stat(".git"); err == nil && !fi.IsDir() {
		// A linked worktree (.git is a file naming the repository): go build stamps no VCS
		// information there, while a clone, which the README's recipe starts from, has it.
		t.Skip("a git worktree: go build stamps the commit only in a clone")
	}
	bin := filepath.Join(t.TempDir(), "idemtest")
	build := exec.Command("go", "build", "-buildvcs=true", "-ldflags", "-X github.com/idemtest/idemtest/cmd.Version=v0.9.1", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^idemtest v0\.9\.1 \(commit ` + string(head[:12]) + `(, modified)?\)\n$`)
	if !want.Match(out) {
		t.Errorf("--version printed %q, want %s", out, want)
	}
}
