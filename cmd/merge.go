package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/check"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/merge"
	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/reporters/junit"
	"github.com/idemtest/idemtest/internal/reporters/terminal"
	"github.com/idemtest/idemtest/internal/reportfile"
	"github.com/idemtest/idemtest/internal/result"
)

// MergeOptions are the inputs of idemtest report merge.
type MergeOptions struct {
	IO      *iostreams.IOStreams
	Version string
	Paths   []string
	JUnit   string
	JSON    string
	HTML    string
	Verbose bool
	GateOptions

	// ReadReport is the report reader from the Factory (a fake in tests).
	ReadReport func(path string) (*merge.Input, error)
}

// NewCmdReport builds idemtest report, the commands that work on reports already written.
func NewCmdReport(f *Factory, runF func(context.Context, *MergeOptions) error) *cobra.Command {
	c := &cobra.Command{
		Use:     "report",
		Short:   "Work on JSON reports already written (merge the reports of CI shards)",
		Example: `  idemtest report merge shard-*.json --junit report.xml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &exitError{ExitUsage, fmt.Errorf("unknown command %q for idemtest report; commands: merge", args[0])}
			}
			return c.Help()
		},
	}
	c.AddCommand(NewCmdMerge(f, runF))
	return c
}

// NewCmdMerge builds idemtest report merge; runF replaces the action in tests.
func NewCmdMerge(f *Factory, runF func(context.Context, *MergeOptions) error) *cobra.Command {
	opts := &MergeOptions{IO: f.IO, Version: f.Version, ReadReport: f.seams().ReadReport}
	c := &cobra.Command{
		Use:   "merge REPORT.json...",
		Short: "Merge the --json reports of run --shard or check --shard jobs into one report",
		Long: `merge reads the --json reports of the jobs a suite was split into (run --shard K/N, or
check --shard K/N of one endpoint), prints the merged summary as the command would, writes the
merged reports, and exits as the command would: 1 when the merged verdict fails (a failed or
errored scenario, a ✗ cell, an interrupted shard), 0 when it passes. Bad input exits 2 and
writes nothing: a file that cannot be read or is no report, reports of different commands or
format versions, check reports of different endpoints, profiles or checks, a scenario (or
tool) in two reports with different results, and a set that is not every shard K/N of one N
(each report records its shard; an unsharded one is 1/1): a shard missing, shards of different
N, or one shard twice with different results. The same shard twice with the same results (a
shard uploaded twice) counts once. Reports are data: merge runs nothing and sends nothing.`,
		Example: `  idemtest report merge shard-*.json --junit report.xml --json report.json
  idemtest report merge check-1.json check-2.json --baseline check-baseline.json`,
		Args: reportArgs(cobra.MinimumNArgs(1), &opts.JUnit, &opts.JSON),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Paths = args
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runMerge(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.JUnit, "junit", "", "write the merged JUnit XML report to `FILE`")
	fl.StringVar(&opts.JSON, "json", "", "write the merged JSON report to `FILE` (- for standard output)")
	fl.StringVar(&opts.HTML, "html", "", "write the merged HTML report to `FILE` (run reports)")
	fl.BoolVarP(&opts.Verbose, "verbose", "v", false, "print every call with its key and outcome (run reports)")
	opts.gateFlags(c, "")
	fl.BoolVar(&opts.RequireCoverage, "require-coverage", false, "fail when the merged coverage lists a mutating tool nothing tested (the shards ran with --coverage or --require-coverage)")
	return c
}

func runMerge(ctx context.Context, opts *MergeOptions) error {
	ins := make([]*merge.Input, 0, len(opts.Paths))
	for _, p := range opts.Paths {
		// The first Ctrl-C ends the merge between inputs (each is read and checked whole).
		if ctx.Err() != nil {
			return silentExit(ExitInterrupted)
		}
		in, err := opts.ReadReport(p)
		if err != nil {
			return &exitError{ExitUsage, err}
		}
		ins = append(ins, in)
	}
	kind, err := merge.Kind(ins)
	if err != nil {
		return &exitError{ExitUsage, err}
	}
	if kind == baseline.Check && opts.HTML != "" {
		return &exitError{ExitUsage, errors.New("--html: check has no HTML report; use --junit or --json")}
	}
	if err := opts.loadBaseline(kind); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return silentExit(ExitInterrupted)
	}
	if kind == baseline.Check {
		rep, err := merge.Check(ins)
		if err != nil {
			return &exitError{ExitUsage, err}
		}
		return mergeCheck(opts, rep)
	}
	rep, err := merge.Run(ins)
	if err != nil && (opts.Baseline == "" || !errors.Is(err, merge.ErrBaselines)) {
		return &exitError{ExitUsage, err}
	}
	return mergeRun(opts, rep)
}

// mergeRun renders a merged run report as run does, and ends as run does.
func mergeRun(opts *MergeOptions, rep *result.Report) error {
	reports, err := reportfile.OpenSet(opts.JUnit, opts.JSON, opts.HTML, append(slices.Clone(opts.Paths), opts.Baseline)...)
	if err != nil {
		return &exitError{ExitUsage, err}
	}
	defer reports.Close()
	// The inputs were redacted when they were written; nothing is left to redact.
	red := redact.New()
	writeJSON := func(w io.Writer) error { return jsonreport.Write(w, rep, opts.Version) }
	gerr := opts.reclassify(baseline.Run, red, writeJSON, &rep.Regressions)
	werr := showRun(opts.IO, rep, red, reports, opts.Verbose, opts.IO.NoColor, opts.Version, writeJSON)
	werr = errors.Join(werr, gerr, opts.updateBaseline(red, writeJSON, opts.IO.ErrOut))
	return opts.mergeExit(rep.Failed(), rep.Interrupted, rep.Regressions, rep.Coverage, werr)
}

// mergeCheck renders a merged check report as check does, and ends as check does.
func mergeCheck(opts *MergeOptions, rep *check.Report) error {
	reports, err := reportfile.OpenSet(opts.JUnit, opts.JSON, "", append(slices.Clone(opts.Paths), opts.Baseline)...)
	if err != nil {
		return &exitError{ExitUsage, err}
	}
	defer reports.Close()
	red := redact.New()
	out, color := humanOut(opts.IO, reports, opts.IO.NoColor)
	writeJSON := func(w io.Writer) error { return jsonreport.WriteCheck(w, rep, opts.Version) }
	gerr := opts.reclassify(baseline.Check, red, writeJSON, &rep.Regressions)
	terminal.WriteMatrix(out, rep.Matrix(), color)
	terminal.Gate(out, rep.Regressions, rep.Coverage, color)
	githubMatrix(opts.IO, out, rep.Matrix(), rep.Regressions, rep.Coverage, red)
	werr := reports.Write(reportfile.Writers{
		JUnit: func(w io.Writer) error { return junit.WriteMatrix(w, rep.Matrix()) },
		JSON:  writeJSON,
	}, red, opts.IO.Out)
	werr = errors.Join(werr, gerr, opts.updateBaseline(red, writeJSON, opts.IO.ErrOut))
	if err := opts.mergeExit(rep.Failed(), rep.Interrupted, rep.Regressions, rep.Coverage, werr); err != nil || !rep.AllSkipped() {
		return err
	}
	return &exitError{ExitFailed, errors.New("no tool could be judged: every check of every shard was skipped, so check proved nothing")}
}

// reclassify replaces the regressions the shards carried with the merged report's against
// merge --baseline, when it is given.
func (o *MergeOptions) reclassify(kind baseline.Kind, red *redact.Redactor, writeJSON func(io.Writer) error, regs **baseline.Result) error {
	if o.Baseline == "" {
		return nil
	}
	*regs = nil // the merged report is compared, not the shards' comparisons
	res, err := o.classify(kind, red, writeJSON)
	*regs = res
	return err
}

// mergeExit is how merge ends: as the producing command with the merged verdict, except that
// an interrupted shard fails the merged report (it is incomplete) instead of exiting 130, as
// merge itself was not interrupted.
func (o *MergeOptions) mergeExit(failed, interrupted bool, regs *baseline.Result, cov []result.Coverage, werr error) error {
	if interrupted {
		fmt.Fprintln(o.IO.ErrOut, "idemtest: a merged report was interrupted: the merged report is incomplete")
	}
	if o.RequireCoverage && result.Gaps(cov) {
		fmt.Fprintf(o.IO.ErrOut, "idemtest: %v\n", result.GapsError(cov))
	}
	return reportExit(o.IO, false, o.gateFailed(failed, regs, cov) || interrupted, werr)
}
