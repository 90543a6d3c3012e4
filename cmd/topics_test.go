package cmd

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/iostreams"
)

// exitCodeConstants are the values of the ExitCode constants declared in this package's
// source, read with go/parser and go/types: a code added there is a code the topic must list.
func exitCodeConstants(t *testing.T) []int {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	paths, _ := filepath.Glob("*.go")
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var codes []int
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				v := s.(*ast.ValueSpec)
				if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "ExitCode" {
					continue
				}
				for _, val := range v.Values {
					tv, err := types.Eval(fset, nil, token.NoPos, types.ExprString(val))
					if err != nil {
						t.Fatalf("%s: %v", types.ExprString(val), err)
					}
					n, _ := constant.Int64Val(tv.Value)
					codes = append(codes, int(n))
				}
			}
		}
	}
	if len(codes) < 4 {
		t.Fatalf("found %d ExitCode constants, want at least 4", len(codes))
	}
	return codes
}

// TestExitCodesTopic: "idemtest help exit-codes" lists every exit code a command can end with
// (each ExitCode constant and each signal's 128+N), each once, and nothing else.
func TestExitCodesTopic(t *testing.T) {
	io, out, _ := iostreams.Test()
	if code := Execute(t.Context(), &Factory{IO: io, Version: "test"}, []string{"help", "exit-codes"}); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	want := append(exitCodeConstants(t), int(signalCode(syscall.SIGTERM)), int(signalCode(syscall.SIGHUP)))
	slices.Sort(want)
	var got []int
	item := regexp.MustCompile(`^  (\d+) {2,}(\S.*)$`)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if m := item.FindStringSubmatch(sc.Text()); m != nil {
			n, _ := strconv.Atoi(m[1])
			got = append(got, n)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the topic lists exit codes %v, want %v", got, want)
	}
	root := testRoot()
	if !strings.Contains(root.Long, "idemtest help exit-codes") {
		t.Error("the root's help does not point at the exit-codes topic")
	}
}

// manPage is what a reader sees of a man page: its .TH header, NAME and SYNOPSIS lines.
type manPage struct {
	th       []string
	name     string
	synopsis string
	sections []string
}

// parseMan parses the roff of a man page: the .TH request's quoted arguments, and the first
// text line of each .SH section that NAME and SYNOPSIS need, font escapes removed.
func parseMan(t *testing.T, b []byte) manPage {
	t.Helper()
	var p manPage
	section := ""
	fonts := strings.NewReplacer(`\fB`, "", `\fP`, "", `\fR`, "", `\fI`, "", `\-`, "-", `\e`, `\`, `\&`, "")
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, ".TH "):
			for _, q := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(l, -1) {
				p.th = append(p.th, q[1])
			}
		case strings.HasPrefix(l, ".SH "):
			section = strings.TrimSpace(strings.Trim(strings.TrimPrefix(l, ".SH "), `"`))
			p.sections = append(p.sections, section)
		case strings.HasPrefix(l, "."), strings.TrimSpace(l) == "":
		case section == "NAME" && p.name == "":
			p.name = fonts.Replace(l)
		case section == "SYNOPSIS" && p.synopsis == "":
			p.synopsis = fonts.Replace(l)
		}
	}
	return p
}

// TestManPages: idemtest man DIR writes one page per command a user can run (hidden ones
// left out) and one per help topic, each a man page of section 1 whose NAME names the command
// with its short help and whose SYNOPSIS is how it is called; no other file.
func TestManPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man1")
	io, _, errOut := iostreams.Test()
	root := NewCmdRoot(&Factory{IO: io, Version: "v9.9.9"})
	root.SetArgs([]string{"man", dir})
	if err := root.Execute(); err != nil {
		t.Fatalf("idemtest man: %v\n%s", err, errOut)
	}
	want := map[string]*cobra.Command{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.IsAdditionalHelpTopicCommand() || c.IsAvailableCommand() || c == root {
			want[strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"] = c
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	for _, must := range []string{"idemtest.1", "idemtest-run.1", "idemtest-check.1", "idemtest-sweep.1", "idemtest-report-merge.1", "idemtest-exit-codes.1"} {
		if want[must] == nil {
			t.Errorf("no command for %s", must)
		}
	}
	if want["idemtest-man.1"] != nil {
		t.Error("the hidden man command would get a page")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		seen[e.Name()] = true
		c := want[e.Name()]
		if c == nil {
			t.Errorf("%s: a page for no command", e.Name())
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		p := parseMan(t, b)
		if len(p.th) < 2 || p.th[0] != "IDEMTEST" || p.th[1] != "1" || !slices.Contains(p.th, "idemtest v9.9.9") {
			t.Errorf("%s: .TH %q, want IDEMTEST section 1 from idemtest v9.9.9", e.Name(), p.th)
		}
		name := strings.TrimSuffix(e.Name(), ".1")
		if p.name != name+" - "+c.Short {
			t.Errorf("%s: NAME %q, want %q", e.Name(), p.name, name+" - "+c.Short)
		}
		call := c.CommandPath()
		if c.IsAdditionalHelpTopicCommand() {
			call = "idemtest help " + c.Name()
		}
		if !strings.HasPrefix(p.synopsis, call) {
			t.Errorf("%s: SYNOPSIS %q, want %q…", e.Name(), p.synopsis, call)
		}
		if !slices.Contains(p.sections, "DESCRIPTION") {
			t.Errorf("%s: no DESCRIPTION section (%v)", e.Name(), p.sections)
		}
	}
	for n := range want {
		if !seen[n] {
			t.Errorf("no page %s", n)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "idemtest-exit-codes.1"))
	for _, code := range []string{"\n  0 ", "\n  1 ", "\n  2 ", "\n  130 ", "\n  143 ", "\n  129 "} {
		if !bytes.Contains(b, []byte(code)) {
			t.Errorf("idemtest-exit-codes.1 lacks the code %q", strings.TrimSpace(code))
		}
	}
}
