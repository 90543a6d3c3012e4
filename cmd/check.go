package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/check"
	"github.com/idemtest/idemtest/internal/check/battery"
	"github.com/idemtest/idemtest/internal/ctxwait"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/openapi"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/reporters/junit"
	"github.com/idemtest/idemtest/internal/reporters/terminal"
	"github.com/idemtest/idemtest/internal/reportfile"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/load"
)

// CheckOptions are the inputs of idemtest check.
type CheckOptions struct {
	IO      *iostreams.IOStreams
	Version string
	EndpointOptions
	SkipTools []string
	Only      []string
	Skip      []string
	Profile   string
	Rounds    int
	Budget    time.Duration
	Fanout    int
	JUnit     string
	JSON      string
	Write     string
	Force     bool
	Shard     string
	GateOptions

	// RunCheck is the battery from the Factory (a fake in tests).
	RunCheck func(ctx context.Context, base *scenario.Scenario, opts check.Options) (*check.Report, error)
}

// NewCmdCheck builds idemtest check; runF replaces the action in tests.
func NewCmdCheck(f *Factory, runF func(context.Context, *CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{IO: f.IO, Version: f.Version, EndpointOptions: f.endpointOptions(), RunCheck: f.seams().RunCheck}
	c := &cobra.Command{
		Use:   "check",
		Short: "Run the conformance battery on every mutating tool of an endpoint",
		Long: `check finds every mutating tool of an endpoint (as run and tools decide), builds valid
arguments from each tool's input schema (or from check.tools in idemtest.yaml), and runs a
fixed battery of ordinary scenarios against it: ` + strings.Join(battery.IDs, ", ") + `.
It prints a matrix: a row per tool, a column per check, ✓ pass, ✗ fail, ⚠ protocol deviation,
– skipped, ? inconclusive, each cell that is not ✓ explained below it. Exit code 1 on any ✗,
and when every check of every tool was skipped (nothing was judged).`,
		Example: `  idemtest check --endpoint refunds
  idemtest check --mcp-command "node server.js" --junit check.xml
  idemtest check --endpoint refunds --only concurrent --rounds 100 --budget 10s
  idemtest check --endpoint refunds --write scenarios/check`,
		Args: reportArgs(cobra.NoArgs, &opts.JUnit, &opts.JSON),
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runCheck(c.Context(), opts)
		},
	}
	opts.flags(c)
	fl := c.Flags()
	fl.Lookup("tool").Usage = "check only this tool (repeatable); with --http-url, the endpoint's tools"
	fl.StringSliceVar(&opts.SkipTools, "skip-tool", nil, "leave this tool out (repeatable)")
	fl.StringSliceVar(&opts.Only, "only", nil, "run only these checks (repeatable): "+strings.Join(battery.IDs, ", "))
	fl.StringSliceVar(&opts.Skip, "skip", nil, "leave these checks out (repeatable; the names --only lists)")
	fl.StringVar(&opts.Profile, "profile", "ietf", "status codes expected of a refused call: ietf (400 missing, 409 in flight, 422 mismatch), stripe (400, 409, 400) or lenient (any 4xx)")
	fl.IntVar(&opts.Rounds, "rounds", 0, "most same-key fan-outs per tool in the concurrent check (0: as many as --budget allows)")
	fl.DurationVar(&opts.Budget, "budget", 2*time.Second, "time per tool and check after which the concurrent check stops starting rounds and the in-flight checks stop trying give-up points")
	fl.IntVar(&opts.Fanout, "fanout", 8, "copies in each concurrent round")
	fl.StringVar(&opts.JUnit, "junit", "", "write a JUnit XML report to `FILE` (a suite per tool, a case per check)")
	fl.StringVar(&opts.JSON, "json", "", "write a JSON report to `FILE` (- for standard output)")
	fl.StringVar(&opts.Write, "write", "", "save the scenarios that ran to `DIR`, as ordinary scenario files")
	fl.BoolVar(&opts.Force, "force", false, "with --write, overwrite existing files")
	fl.StringVar(&opts.Shard, "shard", "", "check only shard `K/N` of the mutating tools (1-based, dealt by sorted name), to split a battery across CI jobs; idemtest report merge joins the --json reports")
	_ = c.RegisterFlagCompletionFunc("only", completeValues(battery.IDs, true))
	_ = c.RegisterFlagCompletionFunc("skip", completeValues(battery.IDs, true))
	_ = c.RegisterFlagCompletionFunc("profile", completeValues(battery.Profiles, false))
	opts.gateFlags(c, "list the mutating tools the battery judged nothing of (left out by check.tools.NAME.skip, or every check skipped), each with its reason, without failing on them")
	return c
}

func runCheck(ctx context.Context, opts *CheckOptions) error {
	if !slices.Contains(battery.Profiles, opts.Profile) {
		return &exitError{ExitUsage, fmt.Errorf("--profile %q: use %s", opts.Profile, strings.Join(battery.Profiles, ", "))}
	}
	if _, err := check.SelectChecks(opts.Only, opts.Skip); err != nil {
		return &exitError{ExitUsage, err}
	}
	if opts.Rounds < 0 || opts.Budget <= 0 {
		return &exitError{ExitUsage, errors.New("--rounds must not be negative and --budget must be above zero")}
	}
	if opts.Fanout < 2 || opts.Fanout > scenario.MaxFanout {
		return &exitError{ExitUsage, fmt.Errorf("--fanout must be from 2 to %d", scenario.MaxFanout)}
	}
	var shardK, shardN int
	if opts.Shard != "" {
		var err error
		if shardK, shardN, err = runner.ParseShard(opts.Shard); err != nil {
			return &exitError{ExitUsage, fmt.Errorf("--shard: %w", err)}
		}
	}
	if err := checkWriteDir(opts.Write); err != nil {
		return err
	}
	if err := opts.loadBaseline(baseline.Check); err != nil {
		return err
	}
	sc, name, inline, err := opts.checkEndpoint(ctx)
	if err != nil {
		return err
	}
	red, reports, err := matrixReports(opts.IO, sc.Secrets, opts.JUnit, opts.JSON, sc.Config, opts.Baseline)
	if err != nil {
		return err
	}
	defer reports.Close()
	out, color := humanOut(opts.IO, reports, opts.IO.NoColor)
	selectTools := opts.Tools
	if opts.HTTPURL != "" && opts.OpenAPI == "" {
		selectTools = nil // with --http-url, --tool names the endpoint's tools
	}
	// The live line shows the services starting and stopping; the cells are lines of their own,
	// and without a terminal a plain line every few seconds says a long cell is still running.
	progress := terminal.NewProgress(opts.IO.ErrOut, 0, opts.IO.LiveErr(), false, color && opts.IO.LiveErr())
	progress.Cells("check", "check")
	progress.Plain(plainEvery(opts.IO.Getenv("IDEMTEST_PROGRESS_EVERY")), nil)
	rep, err := opts.RunCheck(ctx, sc, check.Options{
		Endpoint: name, Tools: selectTools, SkipTools: opts.SkipTools, Only: opts.Only, Skip: opts.Skip,
		Profile: opts.Profile, Rounds: opts.Rounds, Budget: opts.Budget, Fanout: opts.Fanout,
		ShardK: shardK, ShardN: shardN,
		OnEvent: progress.Event,
		OnCell: func(tool string, c *battery.Cell) {
			progress.Cell(tool+" "+c.Check, c.Status, c.Duration)
		},
	})
	progress.Finish()
	if err != nil {
		if rep == nil || len(rep.Rows) == 0 {
			if ctx.Err() != nil {
				return silentExit(ExitInterrupted)
			}
			if ce := (*check.ConfigError)(nil); errors.As(err, &ce) {
				return &exitError{ExitUsage, err}
			}
			return &exitError{ExitFailed, err}
		}
	}
	rep.Shard = result.Shard{Index: shardK, Total: shardN}
	if shardN > 0 && len(rep.Rows) == 0 && !rep.Interrupted {
		fmt.Fprintf(opts.IO.ErrOut, "idemtest: shard %s has no tools\n", opts.Shard)
	}
	writeJSON := func(w io.Writer) error { return jsonreport.WriteCheck(w, rep, opts.Version) }
	var gerr error
	if !rep.Interrupted {
		if opts.Coverage || opts.RequireCoverage {
			rep.Coverage = checkCoverage(rep, sc)
		}
		rep.Regressions, gerr = opts.classify(baseline.Check, red, writeJSON)
	}
	terminal.WriteMatrix(out, rep.Matrix(), color)
	terminal.Gate(out, rep.Regressions, rep.Coverage, color)
	githubMatrix(opts.IO, out, rep.Matrix(), rep.Regressions, rep.Coverage, red)
	werr := reports.Write(reportfile.Writers{
		JUnit: func(w io.Writer) error { return junit.WriteMatrix(w, rep.Matrix()) },
		JSON:  writeJSON,
	}, red, opts.IO.Out)
	werr = errors.Join(werr, gerr, writeScenarios(opts.IO, opts.Write, opts.Force, rep.Specs(), inline))
	if !rep.Interrupted {
		werr = errors.Join(werr, opts.updateBaseline(red, writeJSON, opts.IO.ErrOut))
	}
	if opts.RequireCoverage && result.Gaps(rep.Coverage) && !rep.Interrupted {
		fmt.Fprintf(opts.IO.ErrOut, "idemtest: %v\n", result.GapsError(rep.Coverage))
	}
	failed := opts.gateFailed(rep.Failed(), rep.Regressions, rep.Coverage)
	if err := reportExit(opts.IO, rep.Interrupted, failed, werr); err != nil || !rep.AllSkipped() {
		return err
	}
	return &exitError{ExitFailed, errors.New("no tool could be judged: every check was skipped (the reasons are above), so check proved nothing")}
}

// checkEndpoint resolves the endpoint as tools and init do, and adds the config's check:
// section; for an endpoint given on the command line it also returns the endpoint's definition
// for the scenarios --write saves, which no config defines.
func (o *CheckOptions) checkEndpoint(ctx context.Context) (*scenario.Scenario, string, map[string]any, error) {
	if o.Endpoint != "" {
		sc, name, err := o.resolve(ctx)
		if err != nil {
			return nil, "", nil, err
		}
		inline, err := keyedEndpoints(nil, sc, name)
		return sc, name, inline, err
	}
	type loaded struct {
		cfg *scenario.Scenario
		err error
	}
	l, err := ctxwait.Run(ctx, func() loaded {
		cfg, err := o.LoadConfig(ctx, ".", load.Options{Config: o.Config, AllowHosts: o.AllowHosts})
		return loaded{cfg, err}
	})
	if err != nil {
		return nil, "", nil, silentExit(ExitInterrupted)
	}
	if l.err != nil {
		return nil, "", nil, l.err
	}
	cfg := l.cfg
	if o.HTTPURL != "" && o.OpenAPI == "" && len(o.Tools) == 0 && cfg.Check != nil {
		for n := range cfg.Check.Tools {
			o.Tools = append(o.Tools, n)
		}
		sort.Strings(o.Tools)
	}
	sc, name, err := o.resolve(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	sc.Check = cfg.Check
	inline, err := keyedEndpoints(o.inline(name), sc, name)
	return sc, name, inline, err
}

// keyedEndpoints is the endpoints: section of the scenarios --write saves. check.key shapes the
// keys of the endpoint checked for the battery only: run sends the keys of the endpoint's own
// key spec, so a saved scenario without the format would send idemtest's <session>-<index> keys
// to a server that accepts only, say, UUIDs, and fail where check passed. With check.key, the
// endpoint is saved with it: the ad hoc endpoint (inline), or the config's as written in its
// file (the saved scenario's endpoint then stands in for the config's of the same name), its
// key: spec the one check used, with the format added.
func keyedEndpoints(inline map[string]any, sc *scenario.Scenario, name string) (map[string]any, error) {
	if sc.Check == nil || sc.Check.Key == nil || sc.Endpoints[name] == nil {
		return inline, nil
	}
	var ep map[string]any
	if inline != nil {
		ep, _ = inline[name].(map[string]any)
	} else if sc.Config != "" {
		var err error
		if ep, err = configEndpoint(sc.Config, name); err != nil {
			return nil, err
		}
	}
	if ep == nil {
		return inline, nil
	}
	ep = maps.Clone(ep)
	spec, f := sc.Endpoints[name].Key, *sc.Check.Key
	key := map[string]any{}
	switch {
	case spec.Header != "":
		key["header"] = spec.Header
	case spec.Arg != "":
		key["arg"] = spec.Arg
	case spec.Meta != "":
		key["meta"] = spec.Meta
	}
	key["format"] = f.Name
	if f.Name == "" {
		key["format"] = f.Template
	}
	if f.Length > 0 {
		key["length"] = f.Length
	}
	ep["key"] = key
	return map[string]any{name: ep}, nil
}

// configEndpoint reads the endpoint name of the config file path as written (templates and
// ${VAR} references unexpanded: the saved scenario expands them when it loads), with the
// relative paths the config resolved against its directory made absolute.
func configEndpoint(path, name string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read endpoint %s for --write: %w", name, err)
	}
	var doc struct {
		Endpoints map[string]map[string]any `yaml:"endpoints"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("read endpoint %s for --write: %s: %w", name, path, err)
	}
	ep := maps.Clone(doc.Endpoints[name])
	// Paths the config resolves against its own directory: an OpenAPI document, an MCP server's
	// working directory.
	for _, p := range [][2]string{{"http", "openapi"}, {"mcp", "dir"}} {
		sub, ok := ep[p[0]].(map[string]any)
		if !ok {
			continue
		}
		if src, ok := sub[p[1]].(string); ok && !openapi.IsURL(src) && !filepath.IsAbs(src) {
			abs, err := filepath.Abs(filepath.Join(filepath.Dir(path), src))
			if err != nil {
				return nil, err
			}
			sub = maps.Clone(sub)
			sub[p[1]] = abs
			ep[p[0]] = sub
		}
	}
	return ep, nil
}

// checkCoverage lists the mutating tools the battery judged nothing of: a tool left out with its
// reason, or one whose every check was skipped (with the first reason). The config's
// coverage.exempt moves a tool to exempt with its reason. Every row of the battery is a mutating
// tool (check finds them as run does).
func checkCoverage(rep *check.Report, sc *scenario.Scenario) []result.Coverage {
	cov := result.Coverage{Endpoint: rep.Endpoint, Mutating: len(rep.Rows), Uncovered: []result.Uncovered{}}
	for _, row := range rep.Rows {
		reason := row.Skipped
		judged := false
		for _, c := range row.Cells {
			if c.Status != matrix.Skip {
				judged = true
				break
			}
			if reason == "" {
				reason = c.Check + " skipped: " + c.Reason
			}
		}
		if judged && row.Skipped == "" {
			continue
		}
		if sc.Coverage != nil && sc.Coverage.Exempt[row.Tool] != "" {
			cov.Exempt = append(cov.Exempt, result.Uncovered{Tool: row.Tool, Reason: sc.Coverage.Exempt[row.Tool]})
			continue
		}
		cov.Uncovered = append(cov.Uncovered, result.Uncovered{Tool: row.Tool, Reason: reason})
	}
	return []result.Coverage{cov}
}
