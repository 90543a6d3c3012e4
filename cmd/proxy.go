package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/proxy"
	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
	"github.com/idemtest/idemtest/internal/proxy/fault"
	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/reporters/junit"
	"github.com/idemtest/idemtest/internal/reporters/terminal"
	"github.com/idemtest/idemtest/internal/reportfile"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// ProxyOptions are the inputs of idemtest proxy.
type ProxyOptions struct {
	IO      *iostreams.IOStreams
	Command []string

	Listen     string
	Upstream   string
	HTTP       bool
	AllowHosts []string

	KeyArg, KeyMeta, KeyHeader string
	Mutating                   []string

	Faults     []string
	FaultRate  float64
	FaultKinds []string
	Seed       uint64
	seedSet    bool
	Hold       time.Duration

	RequireRetry bool
	KeyPattern   string
	IgnoreArgs   []string
	JUnit, JSON  string
	Record       string
	// RedactHeaders are more credential headers, besides those run hides
	// (redact.CredentialHeader).
	RedactHeaders []string

	// RunProxy and RandomSeed are the session and the seed of --fault-rate from the Factory
	// (fakes in tests).
	RunProxy   func(ctx context.Context, s *proxy.Session) (*agentverdict.Calls, *proxy.UpstreamError, error)
	RandomSeed func() uint64
}

// faultKinds are the fault kinds --fault and --fault-kinds complete, with an example argument
// where a kind takes one.
var faultKinds = []string{string(fault.LoseResponse), string(fault.Timeout), string(fault.Error) + ":503", string(fault.Delay) + ":2s"}

// NewCmdProxy builds idemtest proxy; runF replaces the action in tests.
func NewCmdProxy(f *Factory, runF func(context.Context, *ProxyOptions) error) *cobra.Command {
	s := f.seams()
	opts := &ProxyOptions{IO: f.IO, RunProxy: s.RunProxy, RandomSeed: s.RandomSeed}
	c := &cobra.Command{
		Use:   "proxy [flags] -- COMMAND [ARGS...]",
		Short: "Sit between an agent and its tools, inject faults, and judge whether the agent reuses its keys",
		Long: `proxy forwards an agent's tool calls to the real tool server, records them (--record),
injects faults on chosen calls, and when the agent disconnects (or on SIGTERM/SIGINT) judges
the agent: every mutating call carries a key, a retry after a fault carries the same key,
one key never covers two different calls. Exit 1 on a violation, when the tool server
ended while the agent was connected or never answered its initialize request, and when the
agent connected but its MCP session never got going (no notifications/initialized after
the answer to initialize). A session without a mutating call says "nothing judged"
(exit 0), never PASS.

MCP over stdio: make the agent start "idemtest proxy [flags] -- node server.js" as its
server command. The verdict goes to stderr; stdout is the agent's MCP stream.
MCP streamable HTTP (--listen, --upstream) and plain HTTP tools (--http): point the agent
at the proxy's address; stop the proxy with SIGTERM or Ctrl-C for the verdict.

${VAR} in the server command and --upstream is expanded from the environment, and its value
is hidden in the verdict, the reports and the trace.`,
		Example: `  idemtest proxy --fault lose-response:issue_refund#1 -- node server.js
  idemtest proxy --fault-rate 0.2 --seed 7 --record trace.jsonl --junit agent.xml -- ./server --stdio
  idemtest proxy --listen 127.0.0.1:7001 --upstream http://127.0.0.1:3000/mcp --fault timeout:create_booking#2
  idemtest proxy --listen 127.0.0.1:7002 --upstream http://127.0.0.1:8080 --http --fault error:503:issue_refund#1`,
		RunE: func(c *cobra.Command, args []string) error {
			// A signal is how an HTTP proxy is ended: the agent verdict decides the exit code.
			f.SignalEnds = true
			opts.Command = args
			opts.seedSet = c.Flags().Changed("seed")
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runProxy(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Listen, "listen", "", "serve on this loopback `ADDR` (HTTP modes)")
	fl.StringVar(&opts.Upstream, "upstream", "", "the tool server's `URL` (HTTP modes)")
	fl.BoolVar(&opts.HTTP, "http", false, "plain JSON-over-HTTP tools instead of MCP streamable HTTP")
	fl.StringSliceVar(&opts.AllowHosts, "allow-host", nil, "allow this non-loopback upstream host (repeatable)")
	fl.StringVar(&opts.KeyArg, "key-arg", "idempotencyKey", "MCP: the tool argument that carries the key")
	fl.StringVar(&opts.KeyMeta, "key-meta", "", "MCP: read the key from this _meta entry instead of an argument")
	fl.StringVar(&opts.KeyHeader, "key-header", "Idempotency-Key", "plain HTTP: the header that carries the key")
	fl.StringSliceVar(&opts.Mutating, "mutating", nil, "the mutating tools (default: MCP tools without readOnlyHint; every plain HTTP tool)")
	fl.StringArrayVar(&opts.Faults, "fault", nil, "a fault on the Nth call of TOOL, as `KIND:TOOL#N`; KIND is lose-response, timeout, error:503 or delay:2s (repeatable)")
	fl.Float64Var(&opts.FaultRate, "fault-rate", 0, "inject a fault on this fraction `P` of the other mutating calls")
	fl.StringSliceVar(&opts.FaultKinds, "fault-kinds", []string{"lose-response"}, "the fault kinds --fault-rate draws from, as lose-response,timeout,error:503,delay:2s")
	fl.Uint64Var(&opts.Seed, "seed", 0, "seed of --fault-rate (default: random, printed)")
	fl.DurationVar(&opts.Hold, "hold", 0, "MCP: after this `DURATION`, answer a call whose answer a fault withholds with a \"request timed out\" error (default: until the agent gives up)")
	fl.BoolVar(&opts.RequireRetry, "require-retry", false, "fail when a call whose outcome a fault hid is never retried")
	fl.StringVar(&opts.KeyPattern, "key-pattern", "", "every key must match this `REGEX`")
	fl.StringSliceVar(&opts.IgnoreArgs, "ignore-arg", nil, "leave this argument (a dotted `PATH`) out when comparing a retry with its call (repeatable)")
	fl.StringVar(&opts.JUnit, "junit", "", "write the verdict as JUnit XML to `FILE` (- for standard output, in the HTTP modes)")
	fl.StringVar(&opts.JSON, "json", "", "write the verdict as JSON to `FILE` (- for standard output, in the HTTP modes)")
	fl.StringVar(&opts.Record, "record", "", "write the trace (JSON Lines) to `FILE`")
	_ = c.RegisterFlagCompletionFunc("fault-kinds", completeValues(faultKinds, true))
	_ = c.RegisterFlagCompletionFunc("fault", func(c *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		kinds, _ := completeValues(faultKinds, false)(c, args, prefix)
		for i := range kinds {
			kinds[i] += ":" // then TOOL#N, which the user writes
		}
		return kinds, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
	fl.StringArrayVar(&opts.RedactHeaders, "redact-header", nil, "HTTP modes: hide the values of this credential header `NAME` in the trace and the verdict, besides Authorization, Proxy-Authorization, Cookie, Set-Cookie, X-Api-Key and every header named like a secret (X-Auth-Token) (repeatable)")
	return c
}

func runProxy(ctx context.Context, opts *ProxyOptions) error {
	httpMode := opts.Listen != "" || opts.Upstream != ""
	var secrets redact.Secrets
	if err := expandProxyArgs(opts, &secrets); err != nil {
		return &exitError{ExitUsage, err}
	}
	sess, jopts, err := proxySetup(opts, httpMode)
	if err != nil {
		return &exitError{ExitUsage, err}
	}
	// The verdict, the reports, the trace and the server's stderr hide the secrets; the agent's
	// own stream (stdout, over stdio) passes unchanged.
	red := redact.New(&secrets)
	errOut := red.Writer(opts.IO.ErrOut)
	if opts.FaultRate > 0 && !opts.seedSet {
		sess.Options.Seed = opts.RandomSeed()
		fmt.Fprintf(errOut, "idemtest proxy: --fault-rate %g --seed %d\n", opts.FaultRate, sess.Options.Seed)
	}
	// Report files are opened before the agent's first call, so a bad path costs nothing.
	if !httpMode && (opts.JUnit == "-" || opts.JSON == "-") {
		return &exitError{ExitUsage, errors.New("proxy over stdio: standard output is the agent's MCP stream, so the verdict cannot go there: give --junit/--json a file (--json verdict.json); - is for the HTTP modes (--listen)")}
	}
	reports, err := reportfile.OpenSet(opts.JUnit, opts.JSON, "", opts.Record)
	if err != nil {
		return &exitError{ExitUsage, err}
	}
	defer reports.Close()
	sess.In, sess.Out, sess.Stdio.Stderr, sess.HTTP.Ready = opts.IO.In, opts.IO.Out, errOut, errOut
	sess.Options.Log = errOut
	if opts.Record != "" {
		f, err := os.Create(opts.Record)
		if err != nil {
			return &exitError{ExitUsage, fmt.Errorf("--record: %w", err)}
		}
		defer f.Close()
		sess.Record = red.Writer(f)
	}

	calls, upErr, err := opts.RunProxy(ctx, sess)
	if err != nil {
		return &exitError{ExitFailed, err}
	}
	// A signal that ended the session (the HTTP modes' normal end) does not stop the verdict;
	// one that comes while the verdict is computed does.
	jctx := ctx
	if ctx.Err() != nil {
		jctx = context.Background()
	}
	v, err := agentverdict.JudgeCalls(jctx, calls, jopts)
	if err != nil {
		return &exitError{ExitInterrupted, fmt.Errorf("verdict on the agent: %w", err)}
	}
	v.Notes = sess.Notes
	if upErr != nil {
		// A tool server that failed the agent is reported with the verdict (redacted: its
		// stderr may quote a secret), which it turns into an error.
		v.Error = upErr.Error()
	} else if st := sess.Stopped; st != nil {
		// The agent connected but its handshake did not complete: nothing was tested, which
		// must not read as "nothing judged" (a choice of the agent's) in a green CI job.
		v.Error, v.Stopped = st.Error(), st.Stage
	}
	if err := terminal.WriteProxy(errOut, v); err != nil {
		return err
	}
	if err := reports.Write(reportfile.Writers{
		JUnit: func(w io.Writer) error { return junit.WriteProxy(w, v) },
		JSON:  func(w io.Writer) error { return jsonreport.WriteProxy(w, v) },
	}, red, opts.IO.Out); err != nil {
		return &exitError{ExitFailed, err}
	}
	if v.Failed() {
		return silentExit(ExitFailed)
	}
	return nil
}

// expandProxyArgs expands ${VAR} references in the server command and the upstream URL, as
// idemtest.yaml does (agents' server configs often cannot), and records the values that came
// from the environment, and URL passwords, as secrets.
func expandProxyArgs(opts *ProxyOptions, secrets *redact.Secrets) error {
	var err error
	for i, a := range opts.Command {
		if opts.Command[i], err = yamlfile.ExpandArg(a, os.LookupEnv, secrets); err != nil {
			return fmt.Errorf("server command: %w", err)
		}
	}
	if opts.Upstream, err = yamlfile.ExpandArg(opts.Upstream, os.LookupEnv, secrets); err != nil {
		return fmt.Errorf("--upstream: %w", err)
	}
	return nil
}

// proxySetup checks the flags and turns them into the session: where the tool server is, the
// proxy's and the verdict's options. Every error is bad usage, found before the agent's first
// call.
func proxySetup(opts *ProxyOptions, httpMode bool) (*proxy.Session, agentverdict.JudgeOptions, error) {
	jopts := agentverdict.JudgeOptions{RequireRetry: opts.RequireRetry, IgnoreArgs: opts.IgnoreArgs}
	fail := func(format string, a ...any) (*proxy.Session, agentverdict.JudgeOptions, error) {
		return nil, jopts, fmt.Errorf(format, a...)
	}
	switch {
	case httpMode && len(opts.Command) > 0:
		return fail("give a server command after -- (stdio) or --listen and --upstream (HTTP), not both")
	case !httpMode && len(opts.Command) == 0:
		return fail("no tool server: give its command after -- (MCP over stdio), or --listen ADDR --upstream URL")
	case httpMode && (opts.Listen == "" || opts.Upstream == ""):
		return fail("HTTP modes need both --listen and --upstream")
	case !httpMode && opts.HTTP:
		return fail("--http needs --listen and --upstream")
	case opts.FaultRate < 0 || opts.FaultRate > 1:
		return fail("--fault-rate must be from 0 to 1")
	case opts.Hold < 0:
		return fail("--hold must not be negative")
	case opts.Hold > 0 && opts.HTTP:
		return fail("--hold is for MCP: over plain HTTP a held answer ends with the agent's own timeout")
	}
	if !httpMode {
		if _, err := exec.LookPath(opts.Command[0]); err != nil {
			return fail("server command: %v", err)
		}
	} else {
		if err := netguard.CheckListen(opts.Listen); err != nil {
			return fail("--listen %s: %v", opts.Listen, err)
		}
		if err := netguard.New(opts.AllowHosts).CheckURL(opts.Upstream); err != nil {
			hint := ""
			if herr := (*netguard.HostError)(nil); errors.As(err, &herr) {
				hint = "; add --allow-host " + herr.Host + " to send duplicates there"
			}
			return fail("--upstream %s: %v%s", opts.Upstream, err, hint)
		}
	}
	sess := &proxy.Session{
		Stdio:   proxy.StdioConfig{Command: opts.Command},
		Options: proxy.Options{Mutating: opts.Mutating, FaultRate: opts.FaultRate, Seed: opts.Seed, Hold: opts.Hold, RedactHeaders: opts.RedactHeaders, IgnoreArgs: opts.IgnoreArgs},
	}
	if httpMode {
		sess.HTTP = proxy.HTTPConfig{Listen: opts.Listen, Upstream: opts.Upstream, Plain: opts.HTTP, AllowHosts: opts.AllowHosts}
	}
	popts := &sess.Options
	switch {
	case opts.HTTP:
		popts.Key = scenario.KeySpec{Header: opts.KeyHeader}
	case opts.KeyMeta != "":
		popts.Key = scenario.KeySpec{Meta: opts.KeyMeta}
	default:
		popts.Key = scenario.KeySpec{Arg: opts.KeyArg}
	}
	for _, s := range opts.Faults {
		f, err := fault.Parse(s)
		if err != nil {
			return fail("%v", err)
		}
		popts.Faults = append(popts.Faults, f)
	}
	kinds, err := fault.ParseKinds(opts.FaultKinds)
	if err != nil {
		return fail("%v", err)
	}
	popts.FaultKinds = kinds
	if opts.KeyPattern != "" {
		re, err := regexp.Compile(opts.KeyPattern)
		if err != nil {
			return fail("--key-pattern: %v", err)
		}
		jopts.KeyPattern = re
	}
	return sess, jopts, nil
}
