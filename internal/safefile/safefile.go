package safefile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// MaxStem bounds a file name's stem (without the extension) in bytes: a longer name is cut and
// gets a short hash of the whole, so that two long names sharing a prefix stay apart.
const MaxStem = 100

// File is one file to write: Name says what it is for (a tool's name, a tool and a check), and
// becomes its file name once made safe; Ext is appended as it is (".yaml").
type File struct {
	Name string
	Ext  string
	Data []byte
	// Fixed keeps Name as the file name (idemtest.yaml): it must already be safe, and it wins
	// a collision with a name that was derived.
	Fixed bool
}

// Options say what Write may do.
type Options struct {
	// Force allows replacing an existing regular file (never a link, a directory or a device).
	Force bool
	// Warn is told of every name that had to change to stay apart from another; nil drops them.
	Warn func(msg string)
	// Wrote is called with each path once its file is written; nil is allowed.
	Wrote func(path string)
}

// ErrExists is wrapped by the error of a file that exists already, without Force.
var ErrExists = errors.New("exists")

// ErrLink is wrapped by the error of a symbolic link, or anything else that is not a regular
// file or a directory, where Write would write.
var ErrLink = errors.New("not a regular file")

// Stem makes s safe as a file name's stem: ASCII letters, digits, '.', '_' and '-' are kept,
// every other byte (path separators, spaces, control characters, each byte of a non-ASCII
// letter) becomes '_'; leading dots are dropped (no hidden files, no ".."); an empty result is
// "unnamed"; a stem longer than MaxStem bytes is cut and ends in '-' and 8 hex digits of the
// hash of s.
func Stem(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		default:
			b[i] = '_'
		}
	}
	out := strings.TrimLeft(string(b), ".")
	if out == "" {
		out = "unnamed"
	}
	if len(out) > MaxStem {
		out = out[:MaxStem-9] + "-" + hash(s)
	}
	return out
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:4])
}

// Names returns the file name of each file, in order, and a warning for each name that had to
// change to stay apart. Names are compared without case (macOS and Windows file systems): of
// the files whose names collide, a Fixed one keeps its name, else the one whose Name needed no
// change, else the first by Name in byte order; every other gets '-' and a hash of its Name. So
// "a b" and "a_b" get distinct names, and the same ones whatever order the tools were listed in.
func Names(files []File) (names, warnings []string) {
	names = make([]string, len(files))
	groups := map[string][]int{}
	for i, f := range files {
		if f.Fixed {
			names[i] = f.Name + f.Ext
		} else {
			names[i] = Stem(f.Name) + f.Ext
		}
		k := strings.ToLower(names[i])
		groups[k] = append(groups[k], i)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	used := map[string]bool{}
	for _, k := range keys {
		used[k] = true
	}
	for _, k := range keys {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		sort.SliceStable(g, func(a, b int) bool {
			fa, fb := files[g[a]], files[g[b]]
			if fa.Fixed != fb.Fixed {
				return fa.Fixed
			}
			ea, eb := Stem(fa.Name) == fa.Name, Stem(fb.Name) == fb.Name
			if ea != eb {
				return ea
			}
			return fa.Name < fb.Name
		})
		keep := g[0]
		for _, i := range g[1:] {
			stem := Stem(files[i].Name)
			if len(stem) > MaxStem-9 {
				stem = stem[:MaxStem-9]
			}
			name := stem + "-" + hash(files[i].Name) + files[i].Ext
			for n := 2; used[strings.ToLower(name)]; n++ {
				name = fmt.Sprintf("%s-%s-%d%s", stem, hash(files[i].Name), n, files[i].Ext)
			}
			used[strings.ToLower(name)] = true
			warnings = append(warnings, fmt.Sprintf("%q and %q both make the file name %s; %q is written to %s",
				files[keep].Name, files[i].Name, names[keep], files[i].Name, name))
			names[i] = name
		}
	}
	return names, warnings
}

// Write writes files into dir and returns their paths. dir is created when missing; when it
// exists it must be a directory, not a link to one. Nothing is written when any file would
// replace something it may not: an existing file without Force (ErrExists), a link, dangling
// or not, or anything but a regular file (ErrLink). A file is created with O_EXCL and
// O_NOFOLLOW, or, with Force, written beside and renamed over the old one, so that a link
// made meanwhile is replaced, never followed.
func Write(dir string, files []File, o Options) ([]string, error) {
	if err := Dir(dir); err != nil {
		return nil, err
	}
	names, warnings := Names(files)
	paths := make([]string, len(files))
	replace := make([]bool, len(files))
	for i, name := range names {
		paths[i] = filepath.Join(dir, name)
		info, err := os.Lstat(paths[i])
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("write %s: %w", paths[i], err)
		case !info.Mode().IsRegular():
			return nil, fmt.Errorf("%s is %s: %w; idemtest writes only regular files, never through a link: remove it or choose another directory",
				paths[i], kind(info.Mode()), ErrLink)
		case !o.Force:
			return nil, fmt.Errorf("%s %w; pass --force to overwrite it", paths[i], ErrExists)
		}
		replace[i] = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	if err := Dir(dir); err != nil {
		return nil, err
	}
	if o.Warn != nil {
		for _, w := range warnings {
			o.Warn(w)
		}
	}
	var written []string
	for i, f := range files {
		var err error
		if replace[i] {
			err = replaceFile(dir, paths[i], f.Data)
		} else {
			err = create(paths[i], f.Data)
		}
		if err != nil {
			return written, err
		}
		written = append(written, paths[i])
		if o.Wrote != nil {
			o.Wrote(paths[i])
		}
	}
	return written, nil
}

// Dir checks that dir is a directory and not a link, or does not exist yet, and that a
// relative dir passes through no link on its way (a link named "scenarios" in a checked-out
// repository must not send the files elsewhere); an absolute dir is taken as named up to its
// last element (/tmp is a link on macOS). Commands call it before they start, so that a bad
// DIR is bad input before anything is sent.
func Dir(dir string) error {
	clean := filepath.Clean(dir)
	check := []string{clean}
	if !filepath.IsAbs(clean) {
		check = nil
		for p := clean; p != "." && p != string(filepath.Separator); p = filepath.Dir(p) {
			if filepath.Base(p) != ".." {
				check = append(check, p)
			}
		}
	}
	for i, p := range check {
		info, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("write to %s: %w", dir, err)
		case info.Mode()&fs.ModeSymlink != 0:
			what := dir + " is a symbolic link"
			if i > 0 {
				what = fmt.Sprintf("%s is inside %s, a symbolic link", dir, p)
			}
			return fmt.Errorf("%s: %w; idemtest writes only into real directories, never through a link: name the directory it points to", what, ErrLink)
		case !info.IsDir():
			return fmt.Errorf("%s is not a directory: %w", p, ErrLink)
		}
	}
	return nil
}

// maxEntries bounds the entries of a directory that CheckEntries reads.
const maxEntries = 100_000

// CheckEntries is Dir, and also refuses a directory holding a YAML file that Write would refuse
// to replace: a symbolic link, dangling or not, or anything but a regular file. Commands call it
// before they start, so that such a DIR is bad input before anything is sent, and not found
// once the work is done (the names written are known only then).
func CheckEntries(dir string) error {
	if err := Dir(dir); err != nil {
		return err
	}
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write to %s: %w", dir, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(maxEntries)
	if err != nil && len(entries) == 0 && !errors.Is(err, io.EOF) {
		return fmt.Errorf("write to %s: %w", dir, err)
	}
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if (ext == ".yaml" || ext == ".yml") && !e.Type().IsRegular() && !e.IsDir() {
			return fmt.Errorf("%s is %s: %w; idemtest writes only regular files, never through a link: remove it or choose another directory",
				filepath.Join(dir, e.Name()), kind(e.Type()), ErrLink)
		}
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file"
}

// create writes a new file; it fails when anything, a dangling link included, is at path.
func create(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s %w (created meanwhile); pass --force to overwrite it", path, ErrExists)
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

// replaceFile writes data beside path and renames it over path: rename replaces what is there,
// a link included, and never follows it.
func replaceFile(dir, path string, data []byte) error {
	tmp, err := os.CreateTemp(dir, ".idemtest-*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}
