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

// README.md and the pages of docs/ (the manual) mark each example that a testscript runs with
// a comment on the line before its fenced block, <!-- test: NAME -->, and each output they show
// with <!-- output: SCRIPT/FILE -->, the golden file of testdata/script/SCRIPT that a testscript
// compares (cmp) with what idemtest printed. Scripts take an example's text from the Markdown
// itself, and TestReadmeOutputs checks every output block against its golden file, so neither
// can drift from what is tested. A marker is unique across all the files.
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

// docFiles returns the Markdown files of the documentation under root: README.md, then
// docs/*.md in name order.
func docFiles(root string) ([]string, error) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(pages)
	return append([]string{filepath.Join(root, "README.md")}, pages...), nil
}

// docBlocks returns the marked fenced blocks of README.md and docs/*.md under root by marker,
// and the file each is in; a marker used in two files is an error naming both.
func docBlocks(root string) (blocks, where map[string]string, err error) {
	files, err := docFiles(root)
	if err != nil {
		return nil, nil, err
	}
	blocks, where = map[string]string{}, map[string]string{}
	for _, f := range files {
		bs, err := readmeBlocks(f)
		if err != nil {
			return nil, nil, err
		}
		for marker, b := range bs {
			if other, dup := where[marker]; dup {
				return nil, nil, fmt.Errorf("block %q is marked in both %s and %s: a marker must be unique across README.md and docs/", marker, other, f)
			}
			blocks[marker], where[marker] = b, f
		}
	}
	return blocks, where, nil
}

// cmdReadme writes a file made of documentation blocks and script files, in order:
// "readme OUT PART..." where a PART is readme:NAME (the block marked NAME in README.md or a
// page of docs/, as written) or a file of the script's work directory.
func cmdReadme(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: readme OUT readme:NAME|FILE...")
	}
	blocks, _, err := docBlocks(ts.Getenv("REPO"))
	ts.Check(err)
	var out strings.Builder
	for _, part := range args[1:] {
		if name, ok := strings.CutPrefix(part, "readme:"); ok {
			b, ok := blocks["test: "+name]
			if !ok {
				ts.Fatalf("neither README.md nor docs/*.md has a block marked <!-- test: %s -->", name)
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

// TestReadmeMarkersUsed: every block of README.md and docs/*.md marked for testing is used by a
// testscript, so a marker cannot claim a test that does not exist.
func TestReadmeMarkersUsed(t *testing.T) {
	blocks, where, err := docBlocks(".")
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
			unused = append(unused, where[marker]+": "+name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("documentation blocks marked for testing that no testscript uses: %v", unused)
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

// TestReadmeOutputs: every output README.md and docs/*.md show equals the golden file a testscript compares
// with what idemtest printed, after normalising both; a README line "..." stands for lines left
// out (the documentation shows excerpts).
func TestReadmeOutputs(t *testing.T) {
	blocks, where, err := docBlocks(".")
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
				t.Errorf("%s's output block <!-- output: %s --> is not the golden file (normalised; ... elides lines).\nshown:\n%s\ngolden:\n%s",
					where[marker], ref, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
	if n == 0 {
		t.Fatal("README.md and docs/*.md mark no output block")
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

var (
	reMdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	reCodeSpan  = regexp.MustCompile("`[^`]*`")
	reHeading   = regexp.MustCompile(`^#{1,6} (.*)$`)
	reSlugStrip = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// markdownLines calls fn with each line of a Markdown text that is outside fenced blocks and its
// number.
func markdownLines(text string, fn func(line int, text string)) {
	fenced := false
	for i, l := range strings.Split(text, "\n") {
		if t := strings.TrimLeft(l, " "); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			continue
		}
		if !fenced {
			fn(i+1, l)
		}
	}
}

// headingAnchors returns the anchors GitHub gives a Markdown text's headings: the heading
// lower-cased, without punctuation, spaces as dashes, and -1, -2… after a repeated one.
func headingAnchors(text string) map[string]bool {
	anchors, seen := map[string]bool{}, map[string]int{}
	markdownLines(text, func(_ int, l string) {
		m := reHeading.FindStringSubmatch(l)
		if m == nil {
			return
		}
		a := strings.ReplaceAll(reSlugStrip.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), ""), " ", "-")
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	})
	return anchors
}

// brokenLinks returns, as FILE:LINE: TARGET, every relative link of README.md and docs/*.md under
// root whose file does not exist, or whose #anchor is not a heading of the Markdown file it names.
func brokenLinks(root string) ([]string, error) {
	files, err := docFiles(root)
	if err != nil {
		return nil, err
	}
	var broken []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		markdownLines(string(b), func(line int, l string) {
			for _, m := range reMdLink.FindAllStringSubmatch(reCodeSpan.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				file := f
				if path != "" {
					file = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
				}
				rel, _ := filepath.Rel(root, f)
				text, err := os.ReadFile(file)
				if err != nil {
					if _, serr := os.Stat(file); serr != nil {
						broken = append(broken, fmt.Sprintf("%s:%d: %s (no such file)", rel, line, target))
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(file, ".md") && !headingAnchors(string(text))[anchor] {
					broken = append(broken, fmt.Sprintf("%s:%d: %s (no such heading)", rel, line, target))
				}
			}
		})
	}
	return broken, nil
}

// TestDocLinks: every relative link of README.md and docs/*.md names a file of the repository,
// and a #anchor into Markdown names one of its headings, so moving a section cannot strand a link.
func TestDocLinks(t *testing.T) {
	broken, err := brokenLinks(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// TestDocLinksBroken: the link check finds a missing file, a missing heading in another page
// and in the same page, and passes links that resolve (up to the repository, to a directory, to
// a heading repeated).
func TestDocLinksBroken(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("examples/a.yaml", "steps: []\n")
	write("README.md", "# Tool\n\n[ok](docs/ci.md#the-action-v2) [ok](examples/) [gone](docs/nope.md)\n"+
		"```\n[in a fence](missing.md)\n```\n`[in code](missing.md)` [web](https://example.com/x)\n")
	write("docs/ci.md", "# CI\n\n## The Action (v2)\n\n## Notes\n\n## Notes\n\n"+
		"[ok](../examples/a.yaml) [ok](../README.md#tool) [ok](#notes-1) [bad](#notes-2) [bad](../README.md#ci)\n")
	broken, err := brokenLinks(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:3: docs/nope.md (no such file)",
		"docs/ci.md:9: #notes-2 (no such heading)",
		"docs/ci.md:9: ../README.md#ci (no such heading)",
	}
	if strings.Join(broken, "\n") != strings.Join(want, "\n") {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(broken, "\n"), strings.Join(want, "\n"))
	}
}

// TestDocBlocksUnique: a marker used in README.md and in a page of docs/ is an error naming both.
func TestDocBlocksUnique(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	block := "<!-- test: twice -->\n```sh\nidemtest run\n```\n"
	for _, f := range []string{"README.md", "docs/run.md"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte(block), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := docBlocks(root)
	if err == nil || !strings.Contains(err.Error(), "README.md and "+filepath.Join(root, "docs/run.md")) {
		t.Fatalf("docBlocks = %v, want an error naming README.md and docs/run.md", err)
	}
	if err := os.WriteFile(filepath.Join(root, "docs/run.md"), []byte(strings.Replace(block, "twice", "once", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks, where, err := docBlocks(root)
	if err != nil || len(blocks) != 2 || where["test: once"] != filepath.Join(root, "docs/run.md") {
		t.Fatalf("docBlocks = %v, %v, %v; want two blocks, test: once from docs/run.md", blocks, where, err)
	}
}
