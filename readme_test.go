//go:build unix

package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"
)

// README.md marks each example that a testscript runs with a comment on the line before its
// fenced block, <!-- test: NAME -->, and each output it shows with <!-- output: SCRIPT/FILE -->,
// the golden file of testdata/script/SCRIPT that a testscript compares (cmp) with what idemtest
// printed. Scripts take an example's text from README.md itself, and TestReadmeOutputs checks
// every output block against its golden file, so neither can drift from what is tested.
var readmeMarker = regexp.MustCompile(`^<!-- ((?:test|output): [a-z0-9_./-]+) -->$`)

// readmeBlocks returns the marked fenced blocks of a Markdown file by marker ("test: NAME",
// "output: SCRIPT/FILE").
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
			b, ok := blocks["test: "+name]
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

// cmdModule makes DIR a view of this module (its go.mod and go.sum, and a link to every other
// entry of its root but .git), so that a README config's "go run ./examples/refundserver", with
// its dir: relative to the file, runs as in a checkout: "module DIR".
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
	entries, err := os.ReadDir(repo)
	ts.Check(err)
	for _, e := range entries {
		switch e.Name() {
		case "go.mod", "go.sum", ".git":
			continue
		}
		ts.Check(os.Symlink(filepath.Join(repo, e.Name()), filepath.Join(dir, e.Name())))
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
	for marker := range blocks {
		name, ok := strings.CutPrefix(marker, "test: ")
		if !ok {
			continue
		}
		if !strings.Contains(all.String(), "readme:"+name+" ") && !strings.Contains(all.String(), "readme:"+name+"\n") {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("README blocks marked for testing that no testscript uses: %v", unused)
	}
}

// update rewrites the golden files inside the scripts (cmp's second file) with what idemtest
// printed: go test -run TestScripts/readme_outputs -update .
var update = flag.Bool("update", false, "rewrite the golden files of testscripts with the actual output")

var (
	reHexSession = regexp.MustCompile(`(^|[^0-9A-Za-z])[0-9a-f]{12}($|[^0-9A-Za-z])`)
	reRefundID   = regexp.MustCompile(`re_[0-9a-f]{16}`)
	reTraceID    = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
	reDuration   = regexp.MustCompile(`\b\d+(\.\d+)?(ms|µs|us|s)\b`)
	reCallMS     = regexp.MustCompile(`(^|\s)\d+\.\d(\s|$)`)
	rePort       = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	reWeak       = regexp.MustCompile(`  ⚠ weak: \d+/\d+ fan-outs did not overlap| · \d+ weak \(fan-outs that did not overlap\)`)
	reSpaces     = regexp.MustCompile(`  +`)
)

// normalizeOutput replaces what changes from run to run in idemtest's human output (sessions
// and keys, refund ids, trace ids, durations, ports, whether a fan-out happened to overlap) with fixed
// words, and aligns columns by two spaces (their widths follow the durations), so that the
// output can be compared with a golden file.
func normalizeOutput(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		l = reRefundID.ReplaceAllString(l, "re_ID")
		l = reTraceID.ReplaceAllString(l, "TRACE")
		for reHexSession.MatchString(l) {
			l = reHexSession.ReplaceAllString(l, "${1}SESSION${2}")
		}
		l = reWeak.ReplaceAllString(l, "")
		l = reDuration.ReplaceAllString(l, "DUR")
		l = rePort.ReplaceAllString(l, "127.0.0.1:PORT")
		for reCallMS.MatchString(l) {
			l = reCallMS.ReplaceAllString(l, "${1}MS${2}")
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		lines[i] = l[:indent] + reSpaces.ReplaceAllString(strings.TrimRight(l[indent:], " "), "  ")
	}
	return strings.Join(lines, "\n")
}

// cmdNormalize writes idemtest's output, normalised for a golden file: "normalize stdout|stderr|FILE OUT".
func cmdNormalize(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: normalize stdout|stderr|FILE OUT")
	}
	text := ts.ReadFile(args[0])
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(normalizeOutput(text)), 0o644))
}

// TestReadmeOutputs: every output README.md shows equals the golden file a testscript compares
// with what idemtest printed, after normalising both; a README line "..." stands for lines left
// out (the README shows excerpts).
func TestReadmeOutputs(t *testing.T) {
	blocks, err := readmeBlocks("README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for marker, block := range blocks {
		ref, ok := strings.CutPrefix(marker, "output: ")
		if !ok {
			continue
		}
		n++
		t.Run(ref, func(t *testing.T) {
			script, file, _ := strings.Cut(ref, "/")
			ar, err := txtar.ParseFile(filepath.Join("testdata/script", script))
			if err != nil {
				t.Fatal(err)
			}
			var golden *txtar.File
			for i := range ar.Files {
				if ar.Files[i].Name == file {
					golden = &ar.Files[i]
				}
			}
			if golden == nil {
				t.Fatalf("testdata/script/%s has no file %s", script, file)
			}
			want := strings.Split(strings.TrimRight(normalizeOutput(string(golden.Data)), "\n"), "\n")
			got := strings.Split(strings.TrimRight(normalizeOutput(block), "\n"), "\n")
			if !elidedMatch(got, want) {
				t.Errorf("README.md's output block <!-- output: %s --> is not the golden file (normalised; ... elides lines).\nREADME:\n%s\ngolden:\n%s",
					ref, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
	if n == 0 {
		t.Fatal("README.md marks no output block")
	}
}

// elidedMatch reports whether shown equals full where a shown line "..." stands for any number
// of full's lines.
func elidedMatch(shown, full []string) bool {
	if len(shown) == 0 {
		return len(full) == 0
	}
	if strings.TrimSpace(shown[0]) == "..." {
		for skip := 0; skip <= len(full); skip++ {
			if elidedMatch(shown[1:], full[skip:]) {
				return true
			}
		}
		return false
	}
	return len(full) > 0 && shown[0] == full[0] && elidedMatch(shown[1:], full[1:])
}
