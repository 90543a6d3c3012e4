package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestStem(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tt := range []struct{ name, in, want string }{
		{"kept", "issue_refund.v2-b", "issue_refund.v2-b"},
		{"path separators", "../../etc/passwd", "_.._etc_passwd"},
		{"leading dots", "..hidden", "hidden"},
		{"newline and control", "a\nb\x00c\x7f", "a_b_c_"},
		{"space and colon", "refund: now #1", "refund__now__1"},
		{"non-ASCII, byte by byte", "é", "__"},
		{"empty", "", "unnamed"},
		{"only dots", "...", "unnamed"},
		{"long", long, strings.Repeat("x", MaxStem-9) + "-" + hash(long)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Stem(tt.in)
			if got != tt.want {
				t.Errorf("Stem(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if len(got) > MaxStem {
				t.Errorf("Stem(%q) is %d bytes, more than %d", tt.in, len(got), MaxStem)
			}
		})
	}
}

func TestNames(t *testing.T) {
	long1, long2 := strings.Repeat("a", 200)+"1", strings.Repeat("a", 200)+"2"
	for _, tt := range []struct {
		name  string
		files []string // "!" marks a Fixed file
		want  []string
		warns int
	}{
		{"distinct", []string{"a", "b"}, []string{"a.yaml", "b.yaml"}, 0},
		{"space and underscore", []string{"a b", "a_b"}, []string{"a_b-" + hash("a b") + ".yaml", "a_b.yaml"}, 1},
		{"space and underscore, listed the other way", []string{"a_b", "a b"}, []string{"a_b.yaml", "a_b-" + hash("a b") + ".yaml"}, 1},
		{"both changed", []string{"a:b", "a b"}, []string{"a_b-" + hash("a:b") + ".yaml", "a_b.yaml"}, 1},
		{"case only", []string{"Issue", "issue"}, []string{"Issue.yaml", "issue-" + hash("issue") + ".yaml"}, 1},
		{"the config's name wins", []string{"idemtest", "!idemtest"}, []string{"idemtest-" + hash("idemtest") + ".yaml", "idemtest.yaml"}, 1},
		{"long names with one prefix", []string{long1, long2}, []string{Stem(long1) + ".yaml", Stem(long2) + ".yaml"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var files []File
			for _, n := range tt.files {
				fixed := strings.HasPrefix(n, "!")
				files = append(files, File{Name: strings.TrimPrefix(n, "!"), Ext: ".yaml", Fixed: fixed})
			}
			got, warns := Names(files)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Names = %q, want %q", got, tt.want)
			}
			if len(warns) != tt.warns {
				t.Errorf("warnings %q, want %d", warns, tt.warns)
			}
			seen := map[string]bool{}
			for _, n := range got {
				if seen[strings.ToLower(n)] {
					t.Errorf("%s given twice", n)
				}
				seen[strings.ToLower(n)] = true
			}
		})
	}
}

// TestWrite: what Write refuses, and that a refusal writes nothing, inside or outside the
// directory.
func TestWrite(t *testing.T) {
	files := []File{{Name: "issue_refund", Ext: ".yaml", Data: []byte("new")}, {Name: "idemtest", Ext: ".yaml", Data: []byte("cfg"), Fixed: true}}
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, dir, outside string)
		dir   string // relative to the test's root; default "out"
		force bool
		err   error
		// wantOut is issue_refund.yaml's content afterwards ("" when it must not exist).
		wantOut string
	}{
		{name: "a new directory", wantOut: "new"},
		{name: "an existing file without --force", err: ErrExists, wantOut: "old",
			setup: func(t *testing.T, dir, _ string) {
				mkdir(t, dir)
				write(t, filepath.Join(dir, "issue_refund.yaml"), "old")
			}},
		{name: "an existing file with --force", force: true, wantOut: "new",
			setup: func(t *testing.T, dir, _ string) {
				mkdir(t, dir)
				write(t, filepath.Join(dir, "issue_refund.yaml"), "old")
			}},
		{name: "a link to a file outside", force: true, err: ErrLink, setup: func(t *testing.T, dir, outside string) {
			mkdir(t, dir)
			write(t, outside, "precious")
			symlink(t, outside, filepath.Join(dir, "issue_refund.yaml"))
		}},
		{name: "a dangling link", force: true, err: ErrLink, setup: func(t *testing.T, dir, outside string) {
			mkdir(t, dir)
			symlink(t, outside, filepath.Join(dir, "idemtest.yaml"))
		}},
		{name: "the directory is a link", err: ErrLink, setup: func(t *testing.T, dir, outside string) {
			mkdir(t, outside)
			symlink(t, outside, dir)
		}},
		{name: "a parent is a link", dir: "out/sub", err: ErrLink, setup: func(t *testing.T, dir, outside string) {
			mkdir(t, outside)
			symlink(t, outside, dir)
		}},
		{name: "the directory is a file", err: ErrLink, setup: func(t *testing.T, dir, _ string) { write(t, dir, "x") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			t.Chdir(root)
			dir, outside := "out", filepath.Join(root, "outside")
			if tt.setup != nil {
				tt.setup(t, dir, outside)
			}
			if tt.dir != "" {
				dir = tt.dir
			}
			before := snapshot(root)
			var wrote []string
			paths, err := Write(dir, files, Options{Force: tt.force, Wrote: func(p string) { wrote = append(wrote, p) }})
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err != nil {
				if len(paths) != 0 || len(wrote) != 0 {
					t.Errorf("refused, yet wrote %v", wrote)
				}
				if after := snapshot(root); !reflect.DeepEqual(after, before) {
					t.Errorf("refused, yet the files changed:\nbefore %v\nafter  %v", before, after)
				}
			} else if !reflect.DeepEqual(paths, wrote) || len(paths) != 2 {
				t.Errorf("paths %v, wrote %v", paths, wrote)
			}
			b, rerr := os.ReadFile(filepath.Join(dir, "issue_refund.yaml"))
			if tt.wantOut == "" {
				return
			}
			if string(b) != tt.wantOut {
				t.Errorf("issue_refund.yaml = %q (%v), want %q", b, rerr, tt.wantOut)
			}
			if leftovers, _ := filepath.Glob(filepath.Join(dir, ".idemtest-*")); len(leftovers) > 0 {
				t.Errorf("temporary files left: %v", leftovers)
			}
		})
	}
}

// TestWriteHostileNames: names a server chose write files inside the directory, each under a
// name without separators or control characters, and none lost.
func TestWriteHostileNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	names := []string{strings.Repeat("r", 300), "two\nlines", "a b", "a_b", "../escape", "/abs", "é"}
	var files []File
	for _, n := range names {
		files = append(files, File{Name: n, Ext: ".yaml", Data: []byte(n)})
	}
	var warns []string
	paths, err := Write(dir, files, Options{Warn: func(m string) { warns = append(warns, m) }})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(names) || len(paths) != len(names) {
		t.Fatalf("%d files for %d names: %v", len(entries), len(names), entries)
	}
	for i, p := range paths {
		if filepath.Dir(p) != dir {
			t.Errorf("%s is not directly inside %s", p, dir)
		}
		base := filepath.Base(p)
		if strings.ContainsAny(base, "\n\x00/\\ ") || len(base) > MaxStem+len(".yaml") {
			t.Errorf("unsafe name %q", base)
		}
		if b, _ := os.ReadFile(p); string(b) != names[i] {
			t.Errorf("%s holds %q, want %q", p, b, names[i])
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], `"a b"`) {
		t.Errorf("warnings %q, want one about \"a b\"", warns)
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// snapshot is every path under root with its content (a link's target), to tell that nothing
// changed.
func snapshot(root string) map[string]string {
	out := map[string]string{}
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[p] = "-> " + target
		case d.IsDir():
			out[p] = "dir"
		default:
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}
