package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/reporters/github"
	"github.com/idemtest/idemtest/internal/reporters/html"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/reporters/junit"
	"github.com/idemtest/idemtest/internal/runner"
)

// reportFiles are the --junit, --json and --html files, opened before the run. A report whose
// path is "-" goes to standard output instead (at most one can), and the terminal report then
// goes to standard error so that the output stays one document.
type reportFiles struct {
	junit, json, html *os.File
	// stdout names the report written to standard output: "junit", "json", "html" or "".
	stdout string
}

// openReports opens (creates or truncates) the report files that are asked for. A path whose
// directory is missing, that is a directory, that lies under a regular file or in /proc or
// /sys is refused here, before the first request.
func openReports(junit, json, html string) (*reportFiles, error) {
	r := &reportFiles{}
	var dash []string
	for _, p := range []struct{ flag, path, name string }{{"--junit", junit, "junit"}, {"--json", json, "json"}, {"--html", html, "html"}} {
		if p.path == "-" {
			dash = append(dash, p.flag)
			r.stdout = p.name
		}
	}
	if len(dash) > 1 {
		return nil, fmt.Errorf("%s: only one report can go to standard output (-)", strings.Join(dash, " and "))
	}
	var err error
	if r.junit, err = openReport(junit); err != nil {
		return nil, err
	}
	if r.json, err = openReport(json); err != nil {
		r.close()
		return nil, err
	}
	if r.html, err = openReport(html); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func openReport(path string) (*os.File, error) {
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
		return nil, fmt.Errorf("report file %s: %w", path, unwrapPath(err))
	}
	if err := checkReportFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("report file %s: %w", path, err)
	}
	return f, nil
}

// unwrapPath drops the "open PATH:" that the message already says.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// write writes rep to every open report file, and to stdout the report that goes there, all
// redacted. Each report is redacted whole: an encoder writes in pieces that could split a secret.
func (r *reportFiles) write(rep *runner.Report, version string, red *redact.Redactor, stdout io.Writer) error {
	var err error
	if r.junit != nil {
		err = errors.Join(err, finish(r.junit, writeRedacted(r.junit, red, func(w io.Writer) error { return junit.Write(w, rep) })))
		r.junit = nil
	}
	if r.json != nil {
		err = errors.Join(err, finish(r.json, writeRedacted(r.json, red, func(w io.Writer) error { return jsonreport.Write(w, rep, version) })))
		r.json = nil
	}
	if r.html != nil {
		err = errors.Join(err, finish(r.html, writeRedacted(r.html, red, func(w io.Writer) error { return html.Write(w, rep, version) })))
		r.html = nil
	}
	switch r.stdout {
	case "junit":
		err = errors.Join(err, writeRedacted(stdout, red, func(w io.Writer) error { return junit.Write(w, rep) }))
	case "json":
		err = errors.Join(err, writeRedacted(stdout, red, func(w io.Writer) error { return jsonreport.Write(w, rep, version) }))
	case "html":
		err = errors.Join(err, writeRedacted(stdout, red, func(w io.Writer) error { return html.Write(w, rep, version) }))
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

// close closes the files that were not written.
func (r *reportFiles) close() {
	if r == nil {
		return
	}
	for _, f := range []*os.File{r.junit, r.json, r.html} {
		if f != nil {
			f.Close()
		}
	}
}

// appendStepSummary appends the run's Markdown summary to the GitHub Actions job summary file.
// A summary that cannot be written is a warning: the run's verdict stands.
func appendStepSummary(path string, rep *runner.Report, red *redact.Redactor) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o666)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY %s: %w", path, unwrapPath(err))
	}
	err = writeRedacted(f, red, func(w io.Writer) error { return github.StepSummary(w, rep) })
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY %s: %w", path, err)
	}
	return nil
}

// matrixReports is how check and sweep start their reports: the streams redact the endpoint's
// secrets from here on, and --junit/--json are opened before anything is sent. Their matrix is
// stdout, so "-" is refused (run, whose report can go to stdout, has its own rule).
func matrixReports(s *IOStreams, secrets *redact.Secrets, command, junit, json string) (*redact.Redactor, *reportFiles, error) {
	red := redact.New(secrets)
	s.Redact(red)
	if junit == "-" || json == "-" {
		return nil, nil, &exitError{ExitUsage, fmt.Errorf("%s writes its reports to files: give --junit/--json a path, not -", command)}
	}
	reports, err := openReports(junit, json, "")
	if err != nil {
		return nil, nil, &exitError{ExitUsage, err}
	}
	return red, reports, nil
}
