package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/scenario"
)

// ExitCode is the process exit status; the codes are part of the CLI contract (README).
type ExitCode int

const (
	// ExitOK: every scenario passed.
	ExitOK ExitCode = 0
	// ExitFailed: a scenario failed or errored.
	ExitFailed ExitCode = 1
	// ExitUsage: bad usage or invalid input; nothing was sent.
	ExitUsage ExitCode = 2
	// ExitInterrupted: interrupted; services were stopped and reports written for what finished.
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

// Factory carries what every command needs.
type Factory struct {
	IO      *IOStreams
	Version string
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

// Main runs idemtest with the process's arguments and streams. Ctrl-C cancels the run.
func Main() ExitCode {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Execute(ctx, &Factory{IO: System(), Version: version()}, os.Args[1:])
}

// Execute runs the command line args and maps the outcome to an exit code.
func Execute(ctx context.Context, f *Factory, args []string) ExitCode {
	root := NewCmdRoot(f)
	root.SetArgs(args)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(f.IO.ErrOut, "idemtest: %v\n", ee.err)
		}
		return ee.code
	}
	var serrs scenario.Errors
	if errors.As(err, &serrs) {
		fmt.Fprintln(f.IO.ErrOut, serrs.Error())
		fmt.Fprintf(f.IO.ErrOut, "idemtest: %d problem(s) found; nothing was sent\n", len(serrs))
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
input (nothing was sent), 130 interrupted.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       f.Version,
	}
	root.SetVersionTemplate("idemtest {{.Version}}\n")
	root.AddCommand(NewCmdRun(f, nil), NewCmdValidate(f, nil), NewCmdTools(f, nil), NewCmdInit(f, nil), NewCmdCheck(f, nil), NewCmdSchema(f), NewCmdVersion(f))
	return root
}

// NewCmdSchema prints the JSON Schema of the scenario format (or of idemtest.yaml).
func NewCmdSchema(f *Factory) *cobra.Command {
	var config bool
	c := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of scenario files (or of idemtest.yaml), for editors",
		Example: `  idemtest schema > idemtest.schema.json
  idemtest schema --config > idemtest-config.schema.json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			b, err := scenario.Schema(config)
			if err != nil {
				return &exitError{ExitFailed, err}
			}
			_, err = fmt.Fprintf(f.IO.Out, "%s\n", b)
			return err
		},
	}
	c.Flags().BoolVar(&config, "config", false, "the schema of idemtest.yaml instead")
	return c
}

// NewCmdVersion prints the version.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(f.IO.Out, "idemtest %s\n", f.Version)
			return nil
		},
	}
}
