package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/reporters/junit"
	"github.com/idemtest/idemtest/internal/reporters/terminal"
	"github.com/idemtest/idemtest/internal/reportfile"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/sweep"
	"github.com/idemtest/idemtest/internal/trace"
)

// SweepOptions are the inputs of idemtest sweep.
type SweepOptions struct {
	IO      *iostreams.IOStreams
	Version string
	EndpointOptions
	Trace       string
	FreshPerRun bool
	JUnit       string
	JSON        string
	Write       string
	Force       bool
	// UseTraceEndpoint runs the server the trace's header names, printed first: only on the
	// user's explicit word, since a trace may come from someone else.
	UseTraceEndpoint bool
	// MaxRuns refuses a sweep of more runs (each replays the whole trace).
	MaxRuns int
	GateOptions

	// ReadTrace and RunSweep are the trace reader and the sweep from the Factory (fakes in
	// tests).
	ReadTrace func(ctx context.Context, path string) (trace.Header, []trace.Call, error)
	RunSweep  func(ctx context.Context, base *scenario.Scenario, tracePath string, calls []trace.Call, opts sweep.Options) (*sweep.Report, error)
}

// defaultMaxRuns is the most runs a sweep makes without --max-runs: 1 + 3 × 166 mutating calls.
const defaultMaxRuns = 500

// NewCmdSweep builds idemtest sweep; runF replaces the action in tests.
func NewCmdSweep(f *Factory, runF func(context.Context, *SweepOptions) error) *cobra.Command {
	s := f.seams()
	opts := &SweepOptions{IO: f.IO, Version: f.Version, EndpointOptions: f.endpointOptions(), ReadTrace: s.ReadTrace, RunSweep: s.RunSweep}
	c := &cobra.Command{
		Use:   "sweep TRACE",
		Short: "Replay a recorded agent session with a fault on each mutating call",
		Long: `sweep replays the calls of a trace (written by idemtest proxy --record)
against an endpoint: run 0 replays them in order with fresh keys; then, for each mutating
call, one run loses that call's response and retries it with its key, one sends it as two
concurrent copies with one key, and one gives up on it after a client timeout while the server
still works and retries it at once with its key (again on an in-progress answer). Each run is an ordinary scenario, and its evidence (the
exactly-once verdict, every call's outcome, the state read-only tools show) must equal run 0's.
A value an earlier answer showed and the recording passed into a later call's arguments is
taken from the new run's answer instead.

The server is always the one named on the command line (--mcp-command, --mcp-url,
--http-url) or in the config (--endpoint): a trace is data, and idemtest never runs the command
or calls the URL its header names, unless --use-trace-endpoint says to (the command is printed
first). The number of runs is printed before they start; over --max-runs (default 500) the
sweep is refused.
Exit code 1 on any ✗ (a run diverged from run 0, or run 0 itself executed a key twice) or when
run 0 is no baseline (a call the recording saw succeed failed in it), 2 on bad input.`,
		Example: `  idemtest proxy --record session.jsonl -- node server.js   # the agent's session
  idemtest sweep session.jsonl --mcp-command 'node server.js'
  idemtest sweep session.jsonl --endpoint refunds --fresh-per-run --junit sweep.xml
  idemtest sweep session.jsonl --mcp-url http://127.0.0.1:3000/mcp --write scenarios/sweep`,
		Args: reportArgs(cobra.ExactArgs(1), &opts.JUnit, &opts.JSON),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Trace = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runSweep(c.Context(), opts)
		},
	}
	opts.flags(c)
	fl := c.Flags()
	fl.BoolVar(&opts.FreshPerRun, "fresh-per-run", false, "start the config's services, sinks and a stdio MCP server afresh for every run (else runs share them)")
	fl.StringVar(&opts.JUnit, "junit", "", "write a JUnit XML report to `FILE` (a case per call and fault)")
	fl.StringVar(&opts.JSON, "json", "", "write a JSON report to `FILE` (- for standard output)")
	fl.StringVar(&opts.Write, "write", "", "save each faulty run to `DIR` as an ordinary scenario that reproduces it")
	fl.BoolVar(&opts.Force, "force", false, "with --write, overwrite existing files")
	fl.BoolVar(&opts.UseTraceEndpoint, "use-trace-endpoint", false, "run the MCP server the trace's header names (printed first); only for a trace you trust")
	fl.IntVar(&opts.MaxRuns, "max-runs", defaultMaxRuns, "refuse a sweep of more than `N` runs (1 + 3 per mutating call, each replaying the whole trace)")
	opts.gateFlags(c, "")
	return c
}

func runSweep(ctx context.Context, opts *SweepOptions) error {
	if opts.MaxRuns < 1 {
		return &exitError{ExitUsage, fmt.Errorf("--max-runs %d: want at least 1", opts.MaxRuns)}
	}
	if err := opts.loadBaseline(baseline.Sweep); err != nil {
		return err
	}
	h, calls, err := opts.ReadTrace(ctx, opts.Trace)
	if pe := (*trace.PosError)(nil); errors.As(err, &pe) {
		return &exitError{ExitUsage, fmt.Errorf("%s:%w", opts.Trace, err)}
	}
	if ctx.Err() != nil {
		return silentExit(ExitInterrupted)
	}
	if err != nil {
		return &exitError{ExitUsage, fmt.Errorf("%s: %w", opts.Trace, reportfile.UnwrapPath(err))}
	}
	if err := opts.fromTrace(h); err != nil {
		return err
	}
	if err := checkWriteDir(opts.Write); err != nil {
		return err
	}
	sc, name, err := opts.resolve(ctx)
	if err != nil {
		return err
	}
	red, reports, err := matrixReports(opts.IO, sc.Secrets, opts.JUnit, opts.JSON, sc.Config, opts.Baseline, opts.Trace)
	if err != nil {
		return err
	}
	defer reports.Close()
	out, color := humanOut(opts.IO, reports, opts.IO.NoColor)
	// Each run is a line as it ends (with its time when not on a terminal), and without a
	// terminal a plain line every few seconds says a long run is still going.
	progress := terminal.NewProgress(opts.IO.ErrOut, 0, opts.IO.LiveErr(), false, color && opts.IO.LiveErr())
	progress.Cells("sweep", "run")
	progress.Plain(plainEvery(opts.IO.Getenv("IDEMTEST_PROGRESS_EVERY")), nil)
	rep, err := opts.RunSweep(ctx, sc, opts.Trace, calls, sweep.Options{
		Endpoint: name, FreshPerRun: opts.FreshPerRun, MaxRuns: opts.MaxRuns,
		OnPlan: func(runs, mutating int) {
			progress.SetCells(runs)
			progress.Printf("sweep: %d runs (run 0, then %d faults for each of %d mutating calls)", runs, len(sweep.Faults), mutating)
		},
		OnCell: func(c *sweep.Cell) {
			label := fmt.Sprintf("call %d %s %s", c.Seq, c.Tool, c.Fault)
			if c.Seq == 0 {
				label = "run 0 (no fault)"
			}
			progress.Cell(label, c.Status, c.Duration)
		},
	})
	progress.Finish()
	if err != nil && (rep == nil || len(rep.Cells) == 0) {
		if ctx.Err() != nil {
			return silentExit(ExitInterrupted)
		}
		if te := (*sweep.TraceError)(nil); errors.As(err, &te) {
			return &exitError{ExitUsage, fmt.Errorf("%s: %w", opts.Trace, err)}
		}
		if le := (*sweep.LimitError)(nil); errors.As(err, &le) {
			return &exitError{ExitUsage, fmt.Errorf("%s: %w: pass --max-runs %d to make them", opts.Trace, err, le.Runs)}
		}
		if rep != nil {
			terminal.WriteMatrix(out, rep.Matrix(), color)
		}
		return &exitError{ExitFailed, err}
	}
	writeJSON := func(w io.Writer) error { return jsonreport.WriteSweep(w, rep, opts.Version) }
	var gerr error
	if !rep.Interrupted {
		rep.Regressions, gerr = opts.classify(baseline.Sweep, red, writeJSON)
	}
	terminal.WriteMatrix(out, rep.Matrix(), color)
	terminal.Gate(out, rep.Regressions, nil, color)
	githubMatrix(opts.IO, out, rep.Matrix(), rep.Regressions, nil, red)
	fmt.Fprintf(opts.IO.ErrOut, "sweep took %s\n", rep.Duration.Round(time.Millisecond))
	werr := errors.Join(reports.Write(reportfile.Writers{
		JUnit: func(w io.Writer) error { return junit.WriteMatrix(w, rep.Matrix()) },
		JSON:  writeJSON,
	}, red, opts.IO.Out), gerr, writeScenarios(opts.IO, opts.Write, opts.Force, rep.Specs(), opts.inline(rep.Endpoint)))
	if !rep.Interrupted {
		werr = errors.Join(werr, opts.updateBaseline(red, writeJSON, opts.IO.ErrOut))
	}
	return reportExit(opts.IO, rep.Interrupted, opts.gateFailed(rep.Failed(), rep.Regressions, nil), werr)
}

// fromTrace checks that the command line or the config names the server to sweep. A trace's
// header only suggests one (the trace may come from someone else): its command is run, printed
// first, only with --use-trace-endpoint.
func (o *SweepOptions) fromTrace(h trace.Header) error {
	named := o.Endpoint != "" || o.MCPCommand != "" || o.MCPURL != "" || o.HTTPURL != "" || o.OpenAPI != ""
	if named && o.UseTraceEndpoint {
		return &exitError{ExitUsage, errors.New("--use-trace-endpoint and an endpoint flag both name the server to sweep: give one")}
	}
	if named {
		return nil
	}
	command, url, ok := h.MCPServer()
	if !ok {
		return &exitError{ExitUsage, fmt.Errorf("%s was recorded against %s (%s): name the endpoint to sweep with --endpoint, --mcp-command, --mcp-url or --http-url", o.Trace, shown(h.Endpoint), shown(h.Transport))}
	}
	flag, value := "--mcp-command", command
	if url != "" {
		flag, value = "--mcp-url", url
	}
	suggested := flag + " " + shellQuote(value)
	if !o.UseTraceEndpoint {
		return &exitError{ExitUsage, fmt.Errorf("%s: no server to sweep named: this trace was recorded against %s; to sweep it, pass %s (or --endpoint NAME of idemtest.yaml); idemtest does not run what a trace names unless --use-trace-endpoint says so", o.Trace, shown(value), suggested)}
	}
	fmt.Fprintf(o.IO.ErrOut, "sweep: running the server the trace names (--use-trace-endpoint): %s\n", suggested)
	o.MCPCommand, o.MCPURL = command, url
	return nil
}

// shown is a value from a trace as a message may print it: quoted with Go's escapes when it
// holds what a terminal would act on (control characters, invalid UTF-8), else in backquotes.
func shown(s string) string {
	if safeText(s) {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}

// shellQuote writes s as one single-quoted shell word, or Go-quoted when it is not plain text.
func shellQuote(s string) string {
	if !safeText(s) {
		return strconv.Quote(s)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func safeText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '`' || unicode.In(r, unicode.Bidi_Control) {
			return false
		}
	}
	return true
}
