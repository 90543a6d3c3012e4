package cmd

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/reporters/github"
	"github.com/idemtest/idemtest/internal/reporters/html"
	"github.com/idemtest/idemtest/internal/reporters/junit"
	"github.com/idemtest/idemtest/internal/reporters/terminal"
	"github.com/idemtest/idemtest/internal/reportfile"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/safefile"
	"github.com/idemtest/idemtest/internal/scenariogen"
)

// appendStepSummary appends the run's Markdown summary to the GitHub Actions job summary file.
// A summary that cannot be written is a warning: the run's verdict stands.
func appendStepSummary(path string, rep *result.Report, red *redact.Redactor) error {
	if err := reportfile.Append(path, red, func(w io.Writer) error { return github.StepSummary(w, rep) }); err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY %s: %w", path, err)
	}
	return nil
}

// showRun is how run and report merge show a run report: the terminal report and the gate,
// GitHub annotations under Actions, the report files (writeJSON is the JSON one, which the
// baseline also reads), and the job summary. It returns the report files' error.
func showRun(s *iostreams.IOStreams, rep *result.Report, red *redact.Redactor, reports *reportfile.Set, verbose, noColor bool, version string, writeJSON func(io.Writer) error) error {
	out, color := humanOut(s, reports, noColor)
	terminal.Write(out, rep, terminal.Options{Color: color, Verbose: verbose})
	terminal.Gate(out, rep.Regressions, rep.Coverage, color)
	if s.Getenv("GITHUB_ACTIONS") == "true" {
		github.Annotate(out, rep, s.Getenv("GITHUB_WORKSPACE"))
	}
	werr := reports.Write(reportfile.Writers{
		JUnit: func(w io.Writer) error { return junit.Write(w, rep) },
		JSON:  writeJSON,
		HTML:  func(w io.Writer) error { return html.Write(w, rep, version) },
	}, red, s.Out)
	if path := s.Getenv("GITHUB_STEP_SUMMARY"); path != "" {
		if err := appendStepSummary(path, rep, red); err != nil {
			fmt.Fprintf(s.ErrOut, "idemtest: warning: %v\n", err)
		}
	}
	return werr
}

// githubMatrix is what check, sweep and report merge show GitHub Actions of a matrix, as
// showRun does of a run: the annotations (to out, beside the matrix) under Actions, and the
// job summary appended to $GITHUB_STEP_SUMMARY. A summary that cannot be written is a warning.
func githubMatrix(s *iostreams.IOStreams, out io.Writer, m matrix.Matrix, res *baseline.Result, cov []result.Coverage, red *redact.Redactor) {
	if s.Getenv("GITHUB_ACTIONS") == "true" {
		github.AnnotateMatrix(out, m, res)
	}
	path := s.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return
	}
	if err := reportfile.Append(path, red, func(w io.Writer) error { return github.MatrixSummary(w, m, res, cov) }); err != nil {
		fmt.Fprintf(s.ErrOut, "idemtest: warning: GITHUB_STEP_SUMMARY %s: %v\n", path, err)
	}
}

// matrixReports is how check and sweep start their reports: the streams redact the endpoint's
// secrets from here on, and --junit/--json are opened before anything is sent. A report may go
// to stdout (-), as run's can; the matrix then goes to stderr (humanOut).
func matrixReports(s *iostreams.IOStreams, secrets *redact.Secrets, junit, json string, inputs ...string) (*redact.Redactor, *reportfile.Set, error) {
	red := redact.New(secrets)
	s.Redact(red)
	reports, err := reportfile.OpenSet(junit, json, "", inputs...)
	if err != nil {
		return nil, nil, &exitError{ExitUsage, err}
	}
	return red, reports, nil
}

// reportArgs checks the report flags before the positional arguments: a report flag written
// without its file took the next flag for one ("check --json --endpoint x"), which leaves the
// flag's value over as a stray argument; saying so is clearer than "unknown command".
func reportArgs(args cobra.PositionalArgs, junit, json *string) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		for _, f := range []struct {
			flag string
			path *string
		}{{"--junit", junit}, {"--json", json}} {
			if f.path == nil {
				continue
			}
			if err := reportfile.CheckPath(f.flag, *f.path); err != nil {
				return &exitError{ExitUsage, err}
			}
		}
		return args(c, a)
	}
}

// humanOut is where a command writes its human-readable report, and whether in colour: stdout,
// or stderr when a machine-readable report takes stdout (--json -, --junit -), so that stdout
// stays one document a parser reads whole.
func humanOut(s *iostreams.IOStreams, reports *reportfile.Set, noColor bool) (io.Writer, bool) {
	color := s.ColorEnabled(noColor)
	if reports.Stdout != "" {
		return s.ErrOut, color && s.LiveErr()
	}
	return s.Out, color
}

// writeScenarios saves the scenarios that ran to dir (check and sweep --write; "" saves none),
// with the endpoint given on the command line (inline) that no config defines; existing files
// are replaced only with force (--force).
func writeScenarios(s *iostreams.IOStreams, dir string, force bool, specs []*scenariogen.Spec, inline map[string]any) error {
	if dir == "" {
		return nil
	}
	paths, err := scenariogen.Write(dir, specs, inline, safefile.Options{
		Force: force,
		Warn:  func(msg string) { fmt.Fprintf(s.ErrOut, "idemtest: %s\n", reporters.Escape(msg)) },
	})
	if err == nil {
		fmt.Fprintf(s.ErrOut, "wrote %s to %s\n", plural.Count(len(paths), "scenario"), reporters.Escape(dir))
	}
	return err
}

// checkWriteDir refuses a --write DIR that is a link or passes through one before anything is
// sent: bad input, exit 2.
func checkWriteDir(dir string) error {
	if dir == "" {
		return nil
	}
	if err := safefile.CheckEntries(dir); err != nil {
		return &exitError{ExitUsage, errors.New(reporters.Escape(err.Error()))}
	}
	return nil
}

// reportExit is how run, check and sweep end once their reports are written: an interruption
// stands (a report that could not be written is said), then a report that could not be
// written, then a failure.
func reportExit(s *iostreams.IOStreams, interrupted, failed bool, werr error) error {
	switch {
	case interrupted:
		if werr != nil {
			fmt.Fprintf(s.ErrOut, "idemtest: %v\n", werr)
		}
		return silentExit(ExitInterrupted)
	case werr != nil:
		return &exitError{ExitFailed, werr}
	case failed:
		return silentExit(ExitFailed)
	}
	return nil
}
