package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/proxy"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/trace"
)

// ProxyOptions are the inputs of idemtest proxy.
type ProxyOptions struct {
	IO      *IOStreams
	Command []string

	Listen     string
	Upstream   string
	HTTP       bool
	AllowHosts []string

	KeyArg, KeyMeta, KeyHeader string
	Mutating                   []string

	Faults    []string
	FaultRate float64
	Seed      uint64
	seedSet   bool

	RequireRetry bool
	KeyPattern   string
	IgnoreArgs   []string
	JUnit, JSON  string
	Record       string
}

// NewCmdProxy builds idemtest proxy; runF replaces the action in tests.
func NewCmdProxy(f *Factory, runF func(context.Context, *ProxyOptions) error) *cobra.Command {
	opts := &ProxyOptions{IO: f.IO}
	c := &cobra.Command{
		Use:   "proxy [flags] -- COMMAND [ARGS...]",
		Short: "Sit between an agent and its tools, inject faults, and judge whether the agent reuses its keys",
		Long: `proxy forwards an agent's tool calls to the real tool server, records them (--record),
injects faults on chosen calls, and when the agent disconnects (or on SIGTERM/SIGINT) judges
the agent: every mutating call carries a key, a retry after a fault carries the same key,
one key never covers two different calls. Exit 1 on a violation.

MCP over stdio: make the agent start "idemtest proxy [flags] -- node server.js" as its
server command. The verdict goes to stderr; stdout is the agent's MCP stream.
MCP streamable HTTP (--listen, --upstream) and plain HTTP tools (--http): point the agent
at the proxy's address; stop the proxy with SIGTERM or Ctrl-C for the verdict.`,
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
	fl.Float64Var(&opts.FaultRate, "fault-rate", 0, "lose the response of this fraction `P` of the other mutating calls")
	fl.Uint64Var(&opts.Seed, "seed", 0, "seed of --fault-rate (default: random, printed)")
	fl.BoolVar(&opts.RequireRetry, "require-retry", false, "fail when a call whose outcome a fault hid is never retried")
	fl.StringVar(&opts.KeyPattern, "key-pattern", "", "every key must match this `REGEX`")
	fl.StringSliceVar(&opts.IgnoreArgs, "ignore-arg", nil, "leave this argument (a dotted `PATH`) out when comparing a retry with its call (repeatable)")
	fl.StringVar(&opts.JUnit, "junit", "", "write the verdict as JUnit XML to `FILE`")
	fl.StringVar(&opts.JSON, "json", "", "write the verdict as JSON to `FILE`")
	fl.StringVar(&opts.Record, "record", "", "write the trace (JSON Lines) to `FILE`")
	return c
}

// proxyUsage is a usage error of idemtest proxy: exit 2, nothing forwarded.
func proxyUsage(format string, a ...any) error {
	return &exitError{ExitUsage, fmt.Errorf(format, a...)}
}

// validate checks the modes and addresses before anything starts: one server (a command, or
// --listen and --upstream), a loopback listener, an upstream the outbound policy allows.
func (opts *ProxyOptions) validate(httpMode bool) error {
	usage := proxyUsage
	switch {
	case httpMode && len(opts.Command) > 0:
		return usage("give a server command after -- (stdio) or --listen and --upstream (HTTP), not both")
	case !httpMode && len(opts.Command) == 0:
		return usage("no tool server: give its command after -- (MCP over stdio), or --listen ADDR --upstream URL")
	case httpMode && (opts.Listen == "" || opts.Upstream == ""):
		return usage("HTTP modes need both --listen and --upstream")
	case !httpMode && opts.HTTP:
		return usage("--http needs --listen and --upstream")
	case opts.FaultRate < 0 || opts.FaultRate > 1:
		return usage("--fault-rate must be from 0 to 1")
	}
	if !httpMode {
		if _, err := exec.LookPath(opts.Command[0]); err != nil {
			return usage("server command: %v", err)
		}
	}
	if httpMode {
		if err := checkListen(opts.Listen); err != nil {
			return usage("%v", err)
		}
		if err := netguard.New(opts.AllowHosts).CheckURL(opts.Upstream); err != nil {
			hint := ""
			if herr := (*netguard.HostError)(nil); errors.As(err, &herr) {
				hint = "; add --allow-host " + herr.Host + " to send duplicates there"
			}
			return usage("--upstream %s: %v%s", opts.Upstream, err, hint)
		}
	}
	return nil
}

func runProxy(ctx context.Context, opts *ProxyOptions) error {
	usage := proxyUsage
	httpMode := opts.Listen != "" || opts.Upstream != ""
	if err := opts.validate(httpMode); err != nil {
		return err
	}
	popts := proxy.Options{Mutating: opts.Mutating, FaultRate: opts.FaultRate, Seed: opts.Seed}
	switch {
	case opts.HTTP:
		popts.Key = scenario.KeySpec{Header: opts.KeyHeader}
	case opts.KeyMeta != "":
		popts.Key = scenario.KeySpec{Meta: opts.KeyMeta}
	default:
		popts.Key = scenario.KeySpec{Arg: opts.KeyArg}
	}
	for _, s := range opts.Faults {
		f, err := proxy.ParseFault(s)
		if err != nil {
			return usage("%v", err)
		}
		popts.Faults = append(popts.Faults, f)
	}
	if opts.FaultRate > 0 && !opts.seedSet {
		popts.Seed = rand.Uint64()
		fmt.Fprintf(opts.IO.ErrOut, "idemtest proxy: --fault-rate %g --seed %d\n", opts.FaultRate, popts.Seed)
	}
	jopts := proxy.JudgeOptions{RequireRetry: opts.RequireRetry, IgnoreArgs: opts.IgnoreArgs}
	if opts.KeyPattern != "" {
		re, err := regexp.Compile(opts.KeyPattern)
		if err != nil {
			return usage("--key-pattern: %v", err)
		}
		jopts.KeyPattern = re
	}
	transport, endpoint := "mcp-stdio", strings.Join(opts.Command, " ")
	if httpMode {
		transport, endpoint = "mcp-http", opts.Upstream
		if opts.HTTP {
			transport = "http"
		}
	}
	// Report files are opened before the agent's first call, so a bad path costs nothing.
	if opts.JUnit == "-" || opts.JSON == "-" {
		return usage("proxy writes its reports to files (stdout is the agent's stream): give --junit/--json a path, not -")
	}
	junitF, err := openReport(opts.JUnit)
	if err != nil {
		return usage("%v", err)
	}
	defer func() { closeIfOpen(junitF) }()
	jsonF, err := openReport(opts.JSON)
	if err != nil {
		return usage("%v", err)
	}
	defer func() { closeIfOpen(jsonF) }()
	if opts.Record != "" {
		f, err := os.Create(opts.Record)
		if err != nil {
			return usage("--record: %v", err)
		}
		defer f.Close()
		if popts.Trace, err = trace.NewWriter(f, trace.Header{Endpoint: endpoint, Transport: transport}); err != nil {
			return &exitError{ExitFailed, err}
		}
	}

	rec := proxy.NewRecorder(popts)
	switch {
	case !httpMode:
		err = proxy.RunStdio(ctx, rec, opts.IO.In, opts.IO.Out, proxy.StdioConfig{Command: opts.Command, Stderr: opts.IO.ErrOut})
	default:
		err = proxy.RunHTTP(ctx, rec, proxy.HTTPConfig{Listen: opts.Listen, Upstream: opts.Upstream, Plain: opts.HTTP, AllowHosts: opts.AllowHosts, Ready: opts.IO.ErrOut})
	}
	calls, cerr := rec.Close()
	if err = errors.Join(err, cerr); err != nil {
		return &exitError{ExitFailed, err}
	}
	v := proxy.Judge(calls, jopts)
	if err := proxy.WriteText(opts.IO.ErrOut, v); err != nil {
		return err
	}
	for _, r := range []struct {
		f     **os.File
		write func(io.Writer, proxy.Verdict) error
	}{{&junitF, proxy.WriteJUnit}, {&jsonF, proxy.WriteJSON}} {
		f := *r.f
		if f == nil {
			continue
		}
		*r.f = nil // written and closed here, not again on the way out
		if err := finish(f, r.write(f, v)); err != nil {
			return &exitError{ExitFailed, err}
		}
	}
	if v.Failed() {
		return silentExit(ExitFailed)
	}
	return nil
}

// checkListen refuses a listen address that is not loopback: the proxy forwards duplicates
// and injects faults, and is not meant to be reachable from elsewhere.
func checkListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %v", addr, err)
	}
	if !netguard.IsLoopback(host) {
		return errors.New("--listen " + addr + ": not a loopback address (use 127.0.0.1:PORT)")
	}
	return nil
}

// closeIfOpen closes a report file that was opened but never written (an error path).
func closeIfOpen(f *os.File) {
	if f != nil {
		_ = f.Close()
	}
}
