package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/reporters/terminal"
	"github.com/idemtest/idemtest/internal/reportfile"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/runtrace"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/load"
)

// RunOptions are the inputs of idemtest run.
type RunOptions struct {
	IO         *iostreams.IOStreams
	Version    string
	Paths      []string
	Config     string
	AllowHosts []string
	Trials     int
	Parallel   int
	JUnit      string
	JSON       string
	HTML       string
	Trace      string
	Tags       []string
	Run        string
	Session    string
	Shard      string
	FailFast   bool
	Verbose    bool
	GateOptions

	// LoadScenarios, RunScenarios and Now come from the Factory: the real loader, runner and
	// clock, or a test's fakes.
	LoadScenarios func(ctx context.Context, paths []string, opts load.Options) ([]*scenario.Scenario, error)
	RunScenarios  func(ctx context.Context, list []*scenario.Scenario, opts runner.Options) *result.Report
	Now           func() time.Time
}

// NewCmdRun builds idemtest run; runF replaces the action in tests.
func NewCmdRun(f *Factory, runF func(context.Context, *RunOptions) error) *cobra.Command {
	s := f.seams()
	opts := &RunOptions{IO: f.IO, Version: f.Version, LoadScenarios: s.LoadScenarios, RunScenarios: s.RunScenarios, Now: s.Now}
	c := &cobra.Command{
		Use:   "run [paths...]",
		Short: "Run scenarios (files or directories, default .)",
		Example: `  idemtest run examples/scenarios
  idemtest run --junit report.xml --json report.json scenarios/
  idemtest run --html report.html scenarios/
  idemtest run --trials 50 --run 'burst' scenarios/refund.yaml
  idemtest run --json - scenarios/ | jq .summary`,
		Args: reportArgs(cobra.ArbitraryArgs, &opts.JUnit, &opts.JSON),
		RunE: func(c *cobra.Command, args []string) error {
			// 0 is the default (each scenario's own trials), not a value to give.
			if c.Flags().Changed("trials") && opts.Trials < 1 {
				return &exitError{ExitUsage, fmt.Errorf("--trials must be from 1 to %d", scenario.MaxTrials)}
			}
			opts.Paths = args
			if len(opts.Paths) == 0 {
				opts.Paths = []string{"."}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Config, "config", "", "config file (default: idemtest.yaml next to the scenarios or above)")
	fl.StringSliceVar(&opts.AllowHosts, "allow-host", nil, "allow calls to this non-loopback host (repeatable)")
	fl.IntVar(&opts.Trials, "trials", 0, "run every scenario's steps N times (default: the scenario's trials)")
	fl.IntVarP(&opts.Parallel, "parallel", "j", 1, "scenarios to run at once")
	fl.StringVar(&opts.JUnit, "junit", "", "write a JUnit XML report to `FILE`")
	fl.StringVar(&opts.JSON, "json", "", "write a JSON report to `FILE` (- for standard output)")
	fl.StringVar(&opts.HTML, "html", "", "write a self-contained HTML report with call timelines to `FILE`")
	fl.StringVar(&opts.Trace, "trace", "", "write every call of every trial to a trace `FILE` (JSON Lines, as the proxy records)")
	fl.StringSliceVar(&opts.Tags, "tag", nil, "run only scenarios with one of these tags")
	fl.StringVar(&opts.Run, "run", "", "run only scenarios whose name matches this `REGEX`")
	fl.StringVar(&opts.Session, "session", "", "pin the session id (trial N>1 uses SESSION-N), to reproduce a failure")
	fl.StringVar(&opts.Shard, "shard", "", "run only shard `K/N` of the scenarios (1-based), to split a suite across CI jobs")
	fl.BoolVar(&opts.FailFast, "fail-fast", false, "stop at the first failing scenario")
	fl.BoolVarP(&opts.Verbose, "verbose", "v", false, "print every call with its key and outcome")
	opts.gateFlags(c, "list each endpoint's mutating tools no scenario called (it lists every endpoint's tools, starting a stdio MCP server no scenario uses), without failing on them")
	_ = c.RegisterFlagCompletionFunc("tag", completeTags(&opts.Config))
	return c
}

func runRun(ctx context.Context, opts *RunOptions) error {
	if opts.Trials < 0 || opts.Trials > scenario.MaxTrials {
		return &exitError{ExitUsage, fmt.Errorf("--trials must be from 1 to %d", scenario.MaxTrials)}
	}
	if opts.Parallel < 1 {
		return &exitError{ExitUsage, errors.New("--parallel must be at least 1")}
	}
	var shard result.Shard
	if opts.Shard != "" {
		k, n, err := runner.ParseShard(opts.Shard)
		if err != nil {
			return &exitError{ExitUsage, fmt.Errorf("--shard: %w", err)}
		}
		shard = result.Shard{Index: k, Total: n}
	}
	var re *regexp.Regexp
	if opts.Run != "" {
		var err error
		if re, err = regexp.Compile(opts.Run); err != nil {
			return &exitError{ExitUsage, fmt.Errorf("--run: %w", err)}
		}
	}
	if err := opts.loadBaseline(baseline.Run); err != nil {
		return err
	}
	list, err := opts.LoadScenarios(ctx, opts.Paths, load.Options{Config: opts.Config, AllowHosts: opts.AllowHosts})
	interrupted := ctx.Err() != nil
	if err != nil && !interrupted {
		return err
	}
	secrets := make([]*redact.Secrets, 0, len(list))
	for _, sc := range list {
		secrets = append(secrets, sc.Secrets)
	}
	red := redact.New(secrets...)
	opts.IO.Redact(red)
	list = runner.Select(list, opts.Tags, re)
	if opts.Shard != "" && !interrupted {
		if list, err = runner.Shard(list, opts.Shard); err != nil {
			return &exitError{ExitUsage, fmt.Errorf("--shard: %w", err)}
		}
		if len(list) == 0 {
			// Still a report, empty: report merge reads every shard's.
			fmt.Fprintf(opts.IO.ErrOut, "idemtest: shard %s has no scenarios\n", opts.Shard)
		}
	}
	if len(list) == 0 && !interrupted && opts.Shard == "" {
		return &exitError{ExitUsage, errors.New("no scenario matches --tag/--run")}
	}
	// The report files are opened now, before anything is sent: a path that cannot take a
	// report is bad usage, not something to find out after the run.
	inputs := []string{opts.Config, opts.Baseline, opts.Trace}
	for _, sc := range list {
		inputs = append(inputs, sc.File, sc.Config)
	}
	reports, err := reportfile.OpenSet(opts.JUnit, opts.JSON, opts.HTML, inputs...)
	if err != nil {
		return &exitError{ExitUsage, err}
	}
	defer reports.Close()
	tracer, closeTrace, err := openRunTrace(opts.Trace, list, red)
	if err != nil {
		return &exitError{ExitUsage, err}
	}
	defer closeTrace()

	// A report on standard output (-) keeps it one document: the human report goes to stderr.
	out, color := humanOut(opts.IO, reports, opts.IO.NoColor)
	// Interrupted while loading: nothing ran, and the reports say so.
	rep := &result.Report{Start: opts.Now(), Interrupted: true}
	switch {
	case !interrupted && len(list) > 0:
		rep = runWithProgress(ctx, opts, list, out, color, tracer, red)
	case !interrupted:
		rep = &result.Report{Start: opts.Now()} // an empty shard
	}
	// Secrets are replaced in the results before any report quotes or escapes them.
	rep.Redact(red)

	rep.Shard = shard // recorded so that report merge can tell a missing shard
	writeJSON := func(w io.Writer) error { return jsonreport.Write(w, rep, opts.Version) }
	var gerr error
	if !rep.Interrupted {
		rep.Regressions, gerr = opts.classify(baseline.Run, red, writeJSON)
	}
	werr := showRun(opts.IO, rep, red, reports, opts.Verbose, opts.IO.NoColor, opts.Version, writeJSON)
	werr = errors.Join(werr, gerr)
	if !rep.Interrupted {
		werr = errors.Join(werr, opts.updateBaseline(red, writeJSON, opts.IO.ErrOut))
	}
	if tracer != nil && werr == nil {
		werr = tracer.Err()
	}
	failed := opts.gateFailed(rep.Failed(), rep.Regressions, rep.Coverage)
	if opts.RequireCoverage && result.Gaps(rep.Coverage) && !rep.Interrupted {
		fmt.Fprintf(opts.IO.ErrOut, "idemtest: %v\n", result.GapsError(rep.Coverage))
	}
	return reportExit(opts.IO, rep.Interrupted, failed, werr)
}

// runWithProgress runs the scenarios with the live line on stderr (on a terminal) from the
// first service starting to the last one stopping, every call on out with -v, and the trace;
// what these show of a call or a scenario's result is redacted first.
func runWithProgress(ctx context.Context, opts *RunOptions, list []*scenario.Scenario, out io.Writer, color bool, tracer *runtrace.Tracer, red *redact.Redactor) *result.Report {
	ropts := runner.Options{Parallel: opts.Parallel, Trials: opts.Trials, Session: opts.Session, FailFast: opts.FailFast, Coverage: opts.Coverage || opts.RequireCoverage}
	progress := terminal.NewProgress(opts.IO.ErrOut, len(list), opts.IO.LiveErr(), false, color && opts.IO.LiveErr())
	progress.SetTrials(runner.TotalTrials(list, ropts))
	progress.Plain(plainEvery(opts.IO.Getenv("IDEMTEST_PROGRESS_EVERY")), func(sc *scenario.Scenario) int {
		return runner.TotalTrials([]*scenario.Scenario{sc}, ropts)
	})
	if opts.Verbose {
		progress.Verbose(out, color)
	}
	ropts.OnEvent = func(ev runner.Event) {
		if ev.Call != nil {
			c := *ev.Call
			c.Redact(red)
			ev.Call = &c
		}
		// A scenario's result is done with when it ends: redacted in place, as the report is.
		ev.Result.Redact(red)
		progress.Event(ev)
		if tracer != nil {
			tracer.Event(ev)
		}
	}
	rep := opts.RunScenarios(ctx, list, ropts)
	progress.Finish()
	if opts.Verbose {
		fmt.Fprintln(out)
	}
	return rep
}

// openRunTrace opens the --trace file before anything is sent and returns the tracer that
// writes every call of the run to it, redacted as the reports are. No path: a nil tracer.
func openRunTrace(path string, list []*scenario.Scenario, red *redact.Redactor) (*runtrace.Tracer, func(), error) {
	if path == "" {
		return nil, func() {}, nil
	}
	if path == "-" {
		return nil, nil, errors.New("--trace needs a file: standard output carries the report")
	}
	f, err := reportfile.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--trace: %w", err)
	}
	tracer, err := runtrace.New(red.Writer(f), list)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("--trace: %w", err)
	}
	return tracer, func() { f.Close() }, nil
}

// plainEvery is how often a run whose stderr is not a terminal says what it is waiting for:
// terminal.PlainEvery, or the duration in IDEMTEST_PROGRESS_EVERY (undocumented, for tests
// that must not wait seconds to see a line; anything that is not a positive duration is
// ignored).
func plainEvery(env string) time.Duration {
	if d, err := time.ParseDuration(env); err == nil && d > 0 {
		return d
	}
	return terminal.PlainEvery
}
