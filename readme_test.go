package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// README.md marks each example that a testscript runs with a comment on the line before its
// fenced block: <!-- test: NAME -->. Scripts take the block's text from README.md itself, so an
// example cannot drift from what is tested.
var readmeMarker = regexp.MustCompile(`^<!-- test: ([a-z0-9-]+) -->$`)

// readmeBlocks returns the marked fenced blocks of a Markdown file by name.
func readmeBlocks(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	blocks := map[string]string{}
	sc := bufio.NewScanner(f)
	line, name := 0, ""
	var body *strings.Builder
	for sc.Scan() {
		line++
		text := sc.Text()
		switch {
		case body != nil && strings.HasPrefix(text, "```"):
			blocks[name] = body.String()
			body, name = nil, ""
		case body != nil:
			body.WriteString(text + "\n")
		case name != "" && strings.HasPrefix(text, "```"):
			body = &strings.Builder{}
		case name != "":
			return nil, fmt.Errorf("%s:%d: the marker of %q is not followed by a fenced block", path, line-1, name)
		default:
			if m := readmeMarker.FindStringSubmatch(text); m != nil {
				if _, dup := blocks[m[1]]; dup {
					return nil, fmt.Errorf("%s:%d: block %q is marked twice", path, line, m[1])
				}
				name = m[1]
			}
		}
	}
	if name != "" {
		return nil, fmt.Errorf("%s: block %q is not closed", path, name)
	}
	return blocks, sc.Err()
}

// cmdReadme writes a file made of README blocks and script files, in order:
// "readme OUT PART..." where a PART is readme:NAME (the marked block NAME of README.md, as
// written) or a file of the script's work directory.
func cmdReadme(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: readme OUT readme:NAME|FILE...")
	}
	blocks, err := readmeBlocks(filepath.Join(ts.Getenv("REPO"), "README.md"))
	ts.Check(err)
	var out strings.Builder
	for _, part := range args[1:] {
		if name, ok := strings.CutPrefix(part, "readme:"); ok {
			b, ok := blocks[name]
			if !ok {
				ts.Fatalf("README.md has no block marked <!-- test: %s -->", name)
			}
			out.WriteString(b)
			continue
		}
		b, err := os.ReadFile(ts.MkAbs(part))
		ts.Check(err)
		out.Write(b)
	}
	path := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(filepath.Dir(path), 0o755))
	ts.Check(os.WriteFile(path, []byte(out.String()), 0o644))
}

// cmdModule makes DIR a view of this module (its go.mod and go.sum, and links to its examples
// and internal packages), so that a README config's "go run ./examples/refundserver", with its
// dir: relative to the file, runs as in a checkout: "module DIR".
func cmdModule(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: module DIR")
	}
	repo, dir := ts.Getenv("REPO"), ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(repo, name))
		ts.Check(err)
		ts.Check(os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	for _, name := range []string{"examples", "internal"} {
		ts.Check(os.Symlink(filepath.Join(repo, name), filepath.Join(dir, name)))
	}
}

// TestReadmeMarkersUsed: every README block marked for testing is used by a testscript, so a
// marker cannot claim a test that does not exist.
func TestReadmeMarkersUsed(t *testing.T) {
	blocks, err := readmeBlocks("README.md")
	if err != nil {
		t.Fatal(err)
	}
	scripts, _ := filepath.Glob("testdata/script/*.txtar")
	var all strings.Builder
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	var unused []string
	for name := range blocks {
		if !strings.Contains(all.String(), "readme:"+name+" ") && !strings.Contains(all.String(), "readme:"+name+"\n") {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("README blocks marked for testing that no testscript uses: %v", unused)
	}
}
