package reportfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/idemtest/idemtest/internal/redact"
)

// Set is the --junit, --json and --html files, opened before the run. A report whose path is
// "-" goes to standard output instead (at most one can), and the terminal report then goes to
// standard error so that the output stays one document.
type Set struct {
	JUnit, JSON, HTML *os.File
	// Stdout names the report written to standard output: "junit", "json", "html" or "".
	Stdout string
}

// OpenSet opens (creates or truncates) the report files that are asked for. A path whose
// directory is missing, that is a directory, that lies under a regular file or in /proc or
// /sys is refused here, before the first request; so are two reports on one file, a report on
// one of the command's inputs (its scenarios, config, baseline, trace, or the reports it
// merges), and a report on an existing YAML file (a scenario or config whose name took the
// report flag's place: "run --json good.yaml").
func OpenSet(junit, json, html string, inputs ...string) (*Set, error) {
	r := &Set{}
	var dash []string
	for _, p := range []struct{ flag, path, name string }{{"--junit", junit, "junit"}, {"--json", json, "json"}, {"--html", html, "html"}} {
		if err := CheckPath(p.flag, p.path); err != nil {
			return nil, err
		}
		if p.path == "-" {
			dash = append(dash, p.flag)
			r.Stdout = p.name
		}
	}
	if len(dash) > 1 {
		return nil, fmt.Errorf("%s: only one report can go to standard output (-)", strings.Join(dash, " and "))
	}
	if err := distinct(map[string]string{"--junit": junit, "--json": json, "--html": html}); err != nil {
		return nil, err
	}
	for _, p := range []struct{ flag, path string }{{"--junit", junit}, {"--json", json}, {"--html", html}} {
		if err := notInput(p.flag, p.path, inputs); err != nil {
			return nil, err
		}
	}
	var err error
	if r.JUnit, err = Open(junit); err != nil {
		return nil, err
	}
	if r.JSON, err = Open(json); err != nil {
		r.Close()
		return nil, err
	}
	if r.HTML, err = Open(html); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// CheckPath refuses a report path that starts with "-" but is not "-": a report flag written
// without its file took the next flag for one ("--json --endpoint x").
func CheckPath(flag, path string) error {
	if len(path) > 1 && path[0] == '-' {
		return fmt.Errorf("%s %s: a report path cannot start with \"-\": write %s - for standard output, or ./%s for a file of that name", flag, path, flag, path)
	}
	return nil
}

// Open opens (creates or truncates) one report file; "" and "-" open nothing (a nil file).
func Open(path string) (*os.File, error) {
	if path == "" || path == "-" {
		return nil, nil
	}
	if dir := filepath.Dir(path); dir != "" {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("report file %s: directory %s does not exist", path, dir)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return nil, fmt.Errorf("report file %s: %w", path, UnwrapPath(err))
	}
	if err := checkReportFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("report file %s: %w", path, err)
	}
	return f, nil
}

// UnwrapPath drops the "open PATH:" that the message already says.
func UnwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Writers write the reports of one command, one function a format; a command leaves out the
// formats it does not have.
type Writers struct {
	JUnit, JSON, HTML func(io.Writer) error
}

// Write writes every open report file, and to stdout the report that goes there, all redacted,
// and closes the files. Each report is redacted whole: an encoder writes in pieces that could
// split a secret.
func (r *Set) Write(w Writers, red *redact.Redactor, stdout io.Writer) error {
	var err error
	for _, f := range []struct {
		file  **os.File
		write func(io.Writer) error
	}{{&r.JUnit, w.JUnit}, {&r.JSON, w.JSON}, {&r.HTML, w.HTML}} {
		if *f.file == nil || f.write == nil {
			continue
		}
		file := *f.file
		*f.file = nil // written and closed here, not again by Close
		err = errors.Join(err, finish(file, writeRedacted(file, red, f.write)))
	}
	toStdout := map[string]func(io.Writer) error{"junit": w.JUnit, "json": w.JSON, "html": w.HTML}[r.Stdout]
	if toStdout != nil {
		err = errors.Join(err, writeRedacted(stdout, red, toStdout))
	}
	return err
}

func writeRedacted(f io.Writer, red *redact.Redactor, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	_, err := f.Write(red.Bytes(buf.Bytes()))
	return err
}

func finish(f *os.File, err error) error {
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write report %s: %w", f.Name(), err)
	}
	return nil
}

// Close closes the files that were not written.
func (r *Set) Close() {
	if r == nil {
		return
	}
	for _, f := range []*os.File{r.JUnit, r.JSON, r.HTML} {
		if f != nil {
			f.Close()
		}
	}
}

// Append appends a redacted report to the file at path (a GitHub Actions job summary), creating
// it if need be. An error opening the file does not repeat its path.
func Append(path string, red *redact.Redactor, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o666)
	if err != nil {
		return UnwrapPath(err)
	}
	err = writeRedacted(f, red, write)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// distinct refuses two report flags that name one file (the same path, or two paths of one
// existing file): one report would overwrite the other.
// notInput refuses a report path that would overwrite one of the command's inputs, or an
// existing YAML file, which no report is.
func notInput(flag, path string, inputs []string) error {
	if path == "" || path == "-" {
		return nil
	}
	for _, in := range inputs {
		if in != "" && in != "-" && sameFile(path, in) {
			return fmt.Errorf("%s %s: that is one of this command's inputs, which the report would overwrite; give the report its own file", flag, path)
		}
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() {
			return fmt.Errorf("%s %s: an existing YAML file (a scenario or a config?) is no report, and would be overwritten; give the report its own file, such as %s report.json", flag, path, flag)
		}
	}
	return nil
}

// sameFile reports whether two paths name one file: the same path cleaned, or one existing
// file reached two ways (a link, another spelling).
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	if aa, err := filepath.Abs(a); err == nil {
		if bb, err := filepath.Abs(b); err == nil && aa == bb {
			return true
		}
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

func distinct(paths map[string]string) error {
	flags := []string{"--junit", "--json", "--html"}
	for i, a := range flags {
		for _, b := range flags[i+1:] {
			pa, pb := paths[a], paths[b]
			if pa == "" || pb == "" || pa == "-" || pb == "-" {
				continue
			}
			same := filepath.Clean(pa) == filepath.Clean(pb)
			if !same {
				sa, errA := os.Stat(pa)
				sb, errB := os.Stat(pb)
				same = errA == nil && errB == nil && os.SameFile(sa, sb)
			}
			if same {
				return fmt.Errorf("%s %s and %s %s name one file: one report would overwrite the other; give each its own file", a, pa, b, pb)
			}
		}
	}
	return nil
}
