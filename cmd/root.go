package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/proc"
	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/reporters/github"
	"github.com/idemtest/idemtest/internal/reportschema"
	"github.com/idemtest/idemtest/internal/scenario/schema"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// ExitCode is the process exit status; the codes are part of the CLI contract (docs/command-line.md).
type ExitCode int

const (
	// ExitOK: every scenario passed.
	ExitOK ExitCode = 0
	// ExitFailed: a scenario failed or errored.
	ExitFailed ExitCode = 1
	// ExitUsage: bad usage or invalid input; nothing was sent.
	ExitUsage ExitCode = 2
	// ExitInterrupted: interrupted (Ctrl-C); services were stopped and reports written for what
	// finished. SIGTERM and SIGHUP end the same way with 143 and 129 (128 + the signal).
	ExitInterrupted ExitCode = 130
)

// Version is set at build time with -ldflags "-X github.com/idemtest/idemtest/cmd.Version=v1.2.3".
var Version = ""

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// commit is the VCS revision the binary was built from, as go build stamps it in a checkout
// (shortened; ", modified" when the tree had changes), or "" when it is not known (go install of
// a module version stamps none: its version names it).
func commit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return ""
	}
	return rev + modified
}

// versionTemplate is what --version prints: the command's version and, when known, the commit.
func versionTemplate() string {
	if c := commit(); c != "" {
		return "idemtest {{.Version}} (commit " + c + ")\n"
	}
	return "idemtest {{.Version}}\n"
}

// Factory carries what every command needs: the streams, and the loaders and runners each
// command copies into its options (factory.go). A nil loader or runner is the real one; a
// test sets fakes.
type Factory struct {
	IO      *iostreams.IOStreams
	Version string
	// SignalEnds is set by a command for which SIGINT/SIGTERM/SIGHUP is the normal way to end
	// (the proxy): its own exit code stands instead of 128 + the signal.
	SignalEnds bool

	Seams
}

// exitError carries an exit code through cobra.
type exitError struct {
	code ExitCode
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// silentExit ends a command with a code whose explanation has already been printed.
func silentExit(code ExitCode) error { return &exitError{code: code} }

// Main runs idemtest with the process's arguments and streams. SIGINT, SIGTERM and SIGHUP
// cancel the run: services are stopped and reports written for what finished, and the exit
// code says which signal it was (128 + its number: 130, 143, 129). A second signal kills every
// child at once and exits without waiting for the rest. On Linux idemtest is the subreaper of
// its descendants, and stops at exit those that escaped their process group.
func Main() ExitCode {
	_ = proc.BecomeSubreaper()
	io := iostreams.System()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupts := proc.HandleInterrupts(cancel, func(sig os.Signal, again bool) {
		if again {
			fmt.Fprintf(io.ErrOut, "idemtest: %s again: killing every process idemtest started\n", signalName(sig))
			return
		}
		fmt.Fprintf(io.ErrOut, "idemtest: %s: stopping (send it again to stop at once)\n", signalName(sig))
	}, func(sig os.Signal) { os.Exit(int(signalCode(sig))) })
	f := &Factory{IO: io, Version: version()}
	code := Execute(ctx, f, os.Args[1:])
	// A second signal still cuts this short.
	proc.StopChildren(stopGrace)
	if sig := interrupts.Stop(); sig != nil && !f.SignalEnds {
		code = signalCode(sig)
	}
	return code
}

// stopGrace is how long a leftover descendant has between SIGTERM and SIGKILL at exit.
const stopGrace = 5 * time.Second

// signalCode is the exit code of a run cancelled by sig: 128 + the signal's number, what a
// shell reports for a process the signal ended (130 for Ctrl-C).
func signalCode(sig os.Signal) ExitCode {
	if s, ok := sig.(syscall.Signal); ok {
		return ExitCode(128 + int(s))
	}
	return ExitInterrupted
}

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "interrupted"
	case syscall.SIGTERM:
		return "terminated"
	case syscall.SIGHUP:
		return "hangup"
	}
	return sig.String()
}

// Execute runs the command line args and maps the outcome to an exit code.
func Execute(ctx context.Context, f *Factory, args []string) ExitCode {
	root := NewCmdRoot(f)
	args, err := verboseFirst(root, args)
	if err != nil {
		fmt.Fprintf(f.IO.ErrOut, "idemtest: %v\n", err)
		return ExitUsage
	}
	root.SetArgs(args)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	err = root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			// An error can quote a server (a JSON-RPC message, a tool name): escaped like reports.
			fmt.Fprintf(f.IO.ErrOut, "idemtest: %s\n", reporters.EscapeText(ee.err.Error()))
		}
		return ee.code
	}
	var serrs yamlfile.Errors
	if errors.As(err, &serrs) {
		fmt.Fprintln(f.IO.ErrOut, reporters.EscapeText(serrs.Error()))
		fmt.Fprintf(f.IO.ErrOut, "idemtest: %s found; nothing was sent\n", plural.Count(len(serrs), "problem"))
		if f.IO.Getenv("GITHUB_ACTIONS") == "true" {
			github.AnnotateLoadErrors(f.IO.Out, serrs, f.IO.Getenv("GITHUB_WORKSPACE"))
		}
		return ExitUsage
	}
	// Anything else is a usage error from cobra (unknown flag, bad value).
	fmt.Fprintf(f.IO.ErrOut, "idemtest: %v\nRun 'idemtest --help' for usage.\n", err)
	return ExitUsage
}

// NewCmdRoot builds the command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "idemtest",
		Short: "Prove that agent tools are retry-safe",
		Long: `idemtest runs YAML scenarios against real tool endpoints: it replays calls with the
same idempotency key, fans duplicates out concurrently, discards responses the server
already committed, and checks that every side effect happened exactly once.

Exit codes: 0 all passed, 1 a scenario failed or errored, 2 bad usage or invalid
input (nothing was sent), 130 interrupted (143 on SIGTERM, 129 on SIGHUP); see
"idemtest help exit-codes".`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       f.Version,
	}
	root.SetVersionTemplate(versionTemplate())
	// --version without a shorthand: cobra adds -v only when no "version" flag exists, and -v is
	// --verbose wherever it is defined (run, report merge).
	root.Flags().Bool("version", false, "print the version")
	// Every command takes --no-color, before or after its name; it is a global flag, once in
	// every command's help, and the commands read it from IO.NoColor.
	root.PersistentFlags().BoolVar(&f.IO.NoColor, "no-color", false, "plain output without colour")
	root.AddCommand(NewCmdRun(f, nil), NewCmdValidate(f, nil), NewCmdTools(f, nil), NewCmdInit(f, nil), NewCmdCheck(f, nil), NewCmdSchema(f), NewCmdVersion(f))
	root.AddCommand(NewCmdProxy(f, nil), NewCmdSweep(f, nil), NewCmdReport(f, nil))
	root.AddCommand(NewCmdAudit(f, nil), NewCmdExitCodes(), NewCmdMan(f))
	root.SetFlagErrorFunc(flagError)
	strictCompletion(root)
	return root
}

// NewCmdSchema prints the JSON Schema of the scenario format (or of idemtest.yaml), or with
// --report KIND that of a machine-readable output.
func NewCmdSchema(f *Factory) *cobra.Command {
	var config bool
	var report string
	c := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of scenario files (or of idemtest.yaml, or of a JSON report)",
		Example: `  idemtest schema > idemtest.schema.json
  idemtest schema --config > idemtest-config.schema.json
  idemtest schema --report run > idemtest-run-report.schema.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if c.Flags().Changed("report") {
				if config {
					return &exitError{ExitUsage, errors.New("--config and --report: give one")}
				}
				b, err := reportschema.Schema(report)
				if err != nil {
					return &exitError{ExitUsage, fmt.Errorf("--report: %w", err)}
				}
				_, err = f.IO.Out.Write(b)
				return err
			}
			b, err := schema.JSON(config)
			if err != nil {
				return &exitError{ExitFailed, err}
			}
			_, err = fmt.Fprintf(f.IO.Out, "%s\n", b)
			return err
		},
	}
	c.Flags().BoolVar(&config, "config", false, "the schema of idemtest.yaml instead")
	c.Flags().StringVar(&report, "report", "", "the schema of a machine-readable output instead: `KIND` is "+strings.Join(reportschema.Kinds, ", ")+" (one line of a trace)")
	_ = c.RegisterFlagCompletionFunc("report", cobra.FixedCompletions(reportschema.Kinds, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// NewCmdVersion prints the version.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Example: `  idemtest version
  idemtest --version   # the same, with the commit of a binary built from a checkout`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(f.IO.Out, "idemtest %s\n", f.Version)
			return nil
		},
	}
}
