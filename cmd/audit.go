package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/audit"
	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/reporters/github"
	"github.com/idemtest/idemtest/internal/reporters/html"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/reporters/junit"
	"github.com/idemtest/idemtest/internal/reporters/terminal"
	"github.com/idemtest/idemtest/internal/reportfile"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/load"
)

// AuditOptions are the inputs of idemtest audit.
type AuditOptions struct {
	IO      *iostreams.IOStreams
	Version string
	Paths   []string
	JUnit   string
	JSON    string
	HTML    string

	TTL, Window     time.Duration
	MaxHitRate      string
	MaxConflictRate string
	Mutating        []string
	Natural         []string
	Mapping         audit.Mapping
	// AgentTraces are idemtest traces of the agent's side (proxy --record): not audited as
	// calls, they say which answers never reached the agent, by trace id.
	AgentTraces []string

	// Listen is the loopback address that receives OTLP/HTTP exports ("": none); Duration and
	// Idle end the listening (0: until interrupted).
	Listen         string
	Duration, Idle time.Duration

	// GateOptions are the baseline flags: a committed audit --json report of known violations
	// (a tool and a kind of finding), so that only new ones fail.
	GateOptions

	// Config is the idemtest.yaml whose audit: section sets what no flag does ("": the one
	// found here or above, if any).
	Config string
	// flagSet says whether a flag was given on the command line (it then wins over audit:).
	flagSet func(name string) bool

	// Read reads one input file and hands each call to add (audit.ReadFile; a fake in tests).
	Read func(ctx context.Context, path string, m audit.Mapping, add func(audit.Call) error) error
	// LoadConfig loads the config (load.ConfigContext).
	LoadConfig func(ctx context.Context, dir string, opts load.Options) (*scenario.Scenario, error)
}

// NewCmdAudit builds idemtest audit; runF replaces the action in tests.
func NewCmdAudit(f *Factory, runF func(context.Context, *AuditOptions) error) *cobra.Command {
	opts := &AuditOptions{IO: f.IO, Version: f.Version, Read: audit.ReadFile, LoadConfig: f.seams().LoadConfig}
	c := &cobra.Command{
		Use:   "audit [FILE...|-]",
		Short: "Judge production traces: double executions, fresh-key retries, keyless calls, hit and conflict rates",
		Long: `audit reads OpenTelemetry traces exported in production (OTLP JSON, one
ExportTraceServiceRequest per line as the Collector's file exporter writes it; gzip is
recognised) or idemtest's own traces, maps spans to tool calls by the semantic conventions
(GenAI execute_tool and MCP tools/call spans: gen_ai.tool.name, gen_ai.tool.call.arguments,
gen_ai.tool.call.result, gen_ai.conversation.id, mcp.session.id, error.type; HTTP server
spans: http.route, http.response.status_code, captured headers such as
http.request.header.idempotency-key and http.response.header.idempotent-replayed), and
reports per tool, each finding with its trace and span ids:

  double-execution     one key executed twice within its lifetime (fails)
  fresh-key-retry      a failed or timed-out call retried, same session, tool and
                       arguments, under another key: it would charge twice (fails)
  keyless-mutating     calls of a mutating tool without a key
  key-shared-sessions  one key used by two sessions
  key-shared-args      one key used for two different argument sets
  expiry-collision     a key executed again later than --ttl
  hit-rate             replays over keyed calls above --max-hit-rate (fails)
  conflict-rate        duplicates refused in flight above --max-conflict-rate (fails)

A lost answer leaves no mark in the server's spans; --agent-trace gives the agent's side
(idemtest proxy --record, whose calls carry the traceparent the proxy sent): the server
spans in the trace of a call whose answer never reached the agent are judged as such, and a
retry of it under a fresh key is found with both span ids.

The audit: section of idemtest.yaml (--config, or the one here or above) sets the mapping
and thresholds no flag gives: key_args, key_attrs, session_attrs, replay_attrs,
execution_span, ttl, window, max_hit_rate, max_conflict_rate, mutating.

With --listen it also receives OTLP/HTTP exports (POST /v1/traces, protobuf or JSON,
gzip accepted) on a loopback address, from a live exporter (OTEL_EXPORTER_OTLP_ENDPOINT) in
a local session or a test, until Ctrl-C, --duration or --idle; then it reports as for files.
Without FILE or --listen, or with -, it reads standard input. It streams: memory follows the keys seen
within --window (twice --ttl by default), not the size of the input.

Exit codes: 0 nothing failed, 1 a finding that fails, 2 bad input (the file and line
are named; no report is written), 130 interrupted.`,
		Example: `  idemtest audit traces.jsonl --ttl 24h --json audit.json
  idemtest audit export.jsonl.gz --max-hit-rate 5% --max-conflict-rate 1%
  idemtest audit session.trace --junit audit.xml
  idemtest audit spans.jsonl --agent-trace proxy.trace
  idemtest audit --listen 127.0.0.1:4318 --idle 30s`,
		Args: reportArgs(cobra.ArbitraryArgs, &opts.JUnit, &opts.JSON),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Paths = args
			opts.flagSet = c.Flags().Changed
			if len(args) == 0 && opts.Listen == "" {
				opts.Paths = []string{"-"}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runAudit(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.JUnit, "junit", "", "write the JUnit XML report to `FILE` (- for standard output)")
	fl.StringVar(&opts.JSON, "json", "", "write the JSON report to `FILE` (- for standard output)")
	fl.StringVar(&opts.HTML, "html", "", "write the HTML report, with the rates plotted per minute, to `FILE` (- for standard output)")
	opts.gateFlags(c, "")
	fl.StringVar(&opts.Config, "config", "", "config `FILE` whose audit: section sets the mapping and thresholds no flag gives (default: idemtest.yaml here or above, if any)")
	fl.DurationVar(&opts.TTL, "ttl", 0, "the keys' lifetime: a key executed again later than it is an expiry collision (0: keys never expire)")
	fl.DurationVar(&opts.Window, "window", 0, "how long a key is remembered after its last call (default twice --ttl; without either, every key)")
	fl.StringVar(&opts.MaxHitRate, "max-hit-rate", "5%", "fail when more than `RATE` of the keyed calls are replays (off to turn it off)")
	fl.StringVar(&opts.MaxConflictRate, "max-conflict-rate", "off", "fail when more than `RATE` of the keyed calls are refused in flight (409)")
	fl.StringVar(&opts.Listen, "listen", "", "receive OTLP/HTTP trace exports at `ADDR` (loopback only, e.g. 127.0.0.1:4318)")
	fl.DurationVar(&opts.Duration, "duration", 0, "with --listen: stop receiving after this long (0: until Ctrl-C)")
	fl.DurationVar(&opts.Idle, "idle", 0, "with --listen: stop once no export came for this long, after the first (0: off)")
	fl.StringSliceVar(&opts.AgentTraces, "agent-trace", nil, "idemtest `TRACE` of the agent's side (proxy --record): a call whose answer never reached the agent marks the server's span in the same trace, so its retry under a fresh key is found")
	fl.StringSliceVar(&opts.Mutating, "mutating", nil, "`TOOL`s that must carry a key even when none of their calls has one")
	fl.StringSliceVar(&opts.Natural, "natural", nil, "`TOOL`s idempotent by nature (a set, an upsert): executed twice under a key, no double execution")
	fl.StringSliceVar(&opts.Mapping.KeyArgs, "key-arg", nil, "argument `NAME`s that hold the key (default "+strings.Join(audit.DefaultKeyArgs, ",")+")")
	fl.StringSliceVar(&opts.Mapping.KeyAttrs, "key-attr", nil, "span `ATTRIBUTE`s that hold the key (default "+strings.Join(audit.DefaultKeyAttrs, ",")+")")
	fl.StringSliceVar(&opts.Mapping.SessionAttrs, "session-attr", nil, "span `ATTRIBUTE`s that name the session (default "+strings.Join(audit.DefaultSessionAttrs, ",")+")")
	fl.StringVar(&opts.Mapping.ExecutionSpan, "execution-span", "", "count an execution per child span whose name matches `GLOB` (e.g. refund.execute, the payment client's span) and did not fail, whatever the answer; default: an ok answer that is no replay")
	fl.StringSliceVar(&opts.Mapping.ReplayAttrs, "replay-attr", nil, "span `ATTRIBUTE`s that mark a replay (default "+strings.Join(audit.DefaultReplayAttrs, ",")+")")
	return c
}

// parseRate reads a threshold: "5%", "0.05", or "off" (-1).
func parseRate(flag, s string) (float64, error) {
	if s == "off" || s == "" {
		return -1, nil
	}
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if pct {
		v /= 100
	}
	if err != nil || v < 0 || v > 1 {
		return 0, fmt.Errorf("%s %q: want a rate such as 5%% or 0.05, or off", flag, s)
	}
	return v, nil
}

func runAudit(ctx context.Context, opts *AuditOptions) error {
	if err := applyAuditConfig(ctx, opts); err != nil {
		return err
	}
	hit, err := parseRate("--max-hit-rate", opts.MaxHitRate)
	if err != nil {
		return &exitError{ExitUsage, err}
	}
	conflict, err := parseRate("--max-conflict-rate", opts.MaxConflictRate)
	if err != nil {
		return &exitError{ExitUsage, err}
	}
	if opts.TTL < 0 || opts.Window < 0 {
		return &exitError{ExitUsage, errors.New("--ttl and --window must not be negative")}
	}
	if opts.Window > 0 && opts.TTL > opts.Window {
		return &exitError{ExitUsage, fmt.Errorf("--window %s is shorter than --ttl %s: a key would be forgotten while it lives", opts.Window, opts.TTL)}
	}
	if err := audit.CheckExecutionSpan(opts.Mapping.ExecutionSpan); err != nil {
		return &exitError{ExitUsage, err}
	}
	if opts.Listen != "" {
		if err := audit.CheckLoopback(opts.Listen); err != nil {
			return &exitError{ExitUsage, err}
		}
	} else if opts.Duration != 0 || opts.Idle != 0 {
		return &exitError{ExitUsage, errors.New("--duration and --idle end --listen: give --listen ADDR too")}
	}
	if opts.Duration < 0 || opts.Idle < 0 {
		return &exitError{ExitUsage, errors.New("--duration and --idle must not be negative")}
	}
	stdin := 0
	for _, p := range opts.Paths {
		if p == "-" {
			stdin++
		}
		for _, r := range []string{opts.JSON, opts.JUnit, opts.HTML} {
			if r != "" && r != "-" && p != "-" && filepath.Clean(r) == filepath.Clean(p) {
				return &exitError{ExitUsage, fmt.Errorf("report %s is also an input: a report never overwrites its input", r)}
			}
		}
	}
	if stdin > 1 {
		return &exitError{ExitUsage, errors.New("- (standard input) given twice")}
	}
	if err := opts.loadBaseline(baseline.Audit); err != nil {
		return err
	}
	a := audit.New(audit.Options{TTL: opts.TTL, Window: opts.Window, MaxHitRate: hit, MaxConflictRate: conflict, Mutating: opts.Mutating, Natural: opts.Natural})
	add, err := withAgentView(ctx, opts, a.Add)
	if err != nil {
		return err
	}
	interrupted := false
	for _, p := range opts.Paths {
		err := opts.Read(ctx, p, opts.Mapping, add)
		if err == nil {
			continue
		}
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			interrupted = true
			break
		}
		var ie *audit.InputError
		if errors.As(err, &ie) {
			return &exitError{ExitUsage, fmt.Errorf("%w; no report was written", err)}
		}
		return &exitError{ExitUsage, fmt.Errorf("audit %s: %w", p, err)}
	}
	if opts.Listen != "" && !interrupted {
		err := audit.Listen(ctx, audit.ListenOptions{Addr: opts.Listen, Duration: opts.Duration, Idle: opts.Idle, Log: opts.IO.ErrOut,
			Ready: func(addr string) {
				fmt.Fprintf(opts.IO.ErrOut, "audit: receiving OTLP/HTTP traces at http://%s/v1/traces (Ctrl-C ends)\n", addr)
			}}, opts.Mapping, add)
		// Ctrl-C is how a listening audit ends: it reports what it received.
		if err != nil {
			return &exitError{ExitUsage, fmt.Errorf("audit --listen: %w", err)}
		}
	}
	rep := a.Report()
	rep.Interrupted = interrupted
	red := redact.New()
	var regs *baseline.Result
	writeJSON := func(w io.Writer) error { return jsonreport.WriteAudit(w, rep, regs, opts.Version) }
	res, err := opts.classify(baseline.Audit, red, writeJSON)
	if err != nil {
		return &exitError{ExitUsage, err}
	}
	regs = res
	reports, err := reportfile.OpenSet(opts.JUnit, opts.JSON, opts.HTML, opts.Paths...)
	if err != nil {
		return &exitError{ExitUsage, err}
	}
	defer reports.Close()
	out, color := humanOut(opts.IO, reports, opts.IO.NoColor)
	werr := terminal.WriteAudit(out, rep, color)
	terminal.Gate(out, res, nil, color)
	werr = errors.Join(werr, reports.Write(reportfile.Writers{
		JUnit: func(w io.Writer) error { return junit.WriteAudit(w, rep) },
		JSON:  writeJSON,
		HTML:  func(w io.Writer) error { return html.WriteAudit(w, rep, opts.Version) },
	}, red, opts.IO.Out))
	if !interrupted {
		werr = errors.Join(werr, opts.updateBaseline(red, writeJSON, opts.IO.ErrOut))
	}
	if path := opts.IO.Getenv("GITHUB_STEP_SUMMARY"); path != "" {
		// As for run: a summary that cannot be written is a warning; the verdict stands.
		if err := reportfile.Append(path, redact.New(), func(w io.Writer) error { return github.AuditSummary(w, rep) }); err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "idemtest: warning: GITHUB_STEP_SUMMARY %s: %v\n", path, err)
		}
	}
	return reportExit(opts.IO, interrupted, opts.gateFailed(rep.Failed(), res, nil), werr)
}

// maxAgentCalls bounds the hidden answers --agent-trace remembers.
const maxAgentCalls = 1 << 20

// withAgentView reads the --agent-trace files and returns add marking as hidden each call in
// the trace of a call whose answer the agent never saw: the server answered, the agent did not
// learn it, and a retry of it must reuse its key.
func withAgentView(ctx context.Context, opts *AuditOptions, add func(audit.Call) error) (func(audit.Call) error, error) {
	if len(opts.AgentTraces) == 0 {
		return add, nil
	}
	hidden := map[string]bool{}
	for _, p := range opts.AgentTraces {
		err := opts.Read(ctx, p, opts.Mapping, func(c audit.Call) error {
			if c.Hidden && c.TraceID != "" {
				if len(hidden) >= maxAgentCalls {
					return fmt.Errorf("over %d hidden answers: split the agent's trace", maxAgentCalls)
				}
				hidden[c.TraceID] = true
			}
			return nil
		})
		if err != nil {
			return nil, &exitError{ExitUsage, fmt.Errorf("--agent-trace %s: %w; no report was written", p, err)}
		}
	}
	return func(c audit.Call) error {
		if hidden[c.TraceID] {
			c.Hidden = true
		}
		return add(c)
	}, nil
}

// applyAuditConfig sets from the config's audit: section each setting no flag gave.
func applyAuditConfig(ctx context.Context, opts *AuditOptions) error {
	if opts.LoadConfig == nil {
		return nil
	}
	sc, err := opts.LoadConfig(ctx, ".", load.Options{Config: opts.Config})
	if err != nil {
		return err
	}
	a := sc.Audit
	if a == nil {
		return nil
	}
	given := opts.flagSet
	if given == nil {
		given = func(string) bool { return false }
	}
	strs := func(flag string, dst *[]string, v []string) {
		if !given(flag) && len(v) > 0 {
			*dst = v
		}
	}
	strs("key-arg", &opts.Mapping.KeyArgs, a.KeyArgs)
	strs("key-attr", &opts.Mapping.KeyAttrs, a.KeyAttrs)
	strs("session-attr", &opts.Mapping.SessionAttrs, a.SessionAttrs)
	strs("replay-attr", &opts.Mapping.ReplayAttrs, a.ReplayAttrs)
	strs("mutating", &opts.Mutating, a.Mutating)
	strs("natural", &opts.Natural, a.Natural)
	if !given("execution-span") && a.ExecutionSpan != "" {
		opts.Mapping.ExecutionSpan = a.ExecutionSpan
	}
	if !given("ttl") && a.TTL != 0 {
		opts.TTL = a.TTL
	}
	if !given("window") && a.Window != 0 {
		opts.Window = a.Window
	}
	rate := func(r float64) string {
		if r < 0 {
			return "off"
		}
		return strconv.FormatFloat(r, 'g', -1, 64)
	}
	if !given("max-hit-rate") && a.MaxHitRateSet {
		opts.MaxHitRate = rate(a.MaxHitRate)
	}
	if !given("max-conflict-rate") && a.MaxConflictRateSet {
		opts.MaxConflictRate = rate(a.MaxConflictRate)
	}
	return nil
}
