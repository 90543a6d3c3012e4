package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/reporters/terminal"
	"github.com/idemtest/idemtest/internal/reportfile"
	"github.com/idemtest/idemtest/internal/safefile"
	"github.com/idemtest/idemtest/internal/scaffold"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/toolset"
)

// ToolsOptions are the inputs of idemtest tools.
type ToolsOptions struct {
	IO *iostreams.IOStreams
	EndpointOptions
	// JSON is the file the JSON list goes to, "-" for standard output (the table then goes to
	// stderr).
	JSON string
	// ListTools is the tool lister from the Factory (a fake in tests).
	ListTools func(ctx context.Context, sc *scenario.Scenario, endpoint string) ([]toolset.ToolInfo, error)
}

// NewCmdTools builds idemtest tools.
func NewCmdTools(f *Factory, runF func(context.Context, *ToolsOptions) error) *cobra.Command {
	opts := &ToolsOptions{IO: f.IO, EndpointOptions: f.endpointOptions(), ListTools: f.seams().ListTools}
	c := &cobra.Command{
		Use:   "tools",
		Short: "List an endpoint's tools and whether idemtest treats each as mutating",
		Example: `  idemtest tools --endpoint refunds_mcp
  idemtest tools --mcp-command "node server.js" --json -`,
		// --json was a switch: "tools --json --endpoint x" takes "--endpoint" for the file.
		Args: reportArgs(cobra.NoArgs, nil, &opts.JSON),
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runTools(c.Context(), opts)
		},
	}
	opts.flags(c)
	c.Flags().StringVar(&opts.JSON, "json", "", "write the tools as JSON to `FILE` (- for standard output)")
	return c
}

func runTools(ctx context.Context, opts *ToolsOptions) error {
	sc, name, err := opts.resolve(ctx)
	if err != nil {
		return err
	}
	red := redact.New(sc.Secrets)
	opts.IO.Redact(red)
	reports, err := reportfile.OpenSet("", opts.JSON, "")
	if err != nil {
		return &exitError{ExitUsage, err}
	}
	defer reports.Close()
	tools, err := opts.ListTools(ctx, sc, name)
	if ctx.Err() != nil {
		return silentExit(ExitInterrupted)
	}
	if err != nil {
		return &exitError{ExitFailed, err}
	}
	out, _ := humanOut(opts.IO, reports, false)
	if err := terminal.ToolsTable(out, tools); err != nil {
		return err
	}
	if err := reports.Write(reportfile.Writers{JSON: func(w io.Writer) error { return jsonreport.WriteTools(w, tools) }}, red, opts.IO.Out); err != nil {
		return &exitError{ExitFailed, err}
	}
	return nil
}

// InitOptions are the inputs of idemtest init.
type InitOptions struct {
	IO *iostreams.IOStreams
	EndpointOptions
	Dir    string
	Force  bool
	Fanout int
	Trials int
	// ListTools is the tool lister from the Factory (a fake in tests).
	ListTools func(ctx context.Context, sc *scenario.Scenario, endpoint string) ([]toolset.ToolInfo, error)
}

// NewCmdInit builds idemtest init.
func NewCmdInit(f *Factory, runF func(context.Context, *InitOptions) error) *cobra.Command {
	opts := &InitOptions{IO: f.IO, EndpointOptions: f.endpointOptions(), ListTools: f.seams().ListTools}
	c := &cobra.Command{
		Use:   "init",
		Short: "Write a starting scenario for each mutating tool of an endpoint",
		Example: `  idemtest init --endpoint refunds_mcp --dir scenarios/refunds
  idemtest init --mcp-command "node server.js" --dir scenarios`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runInit(c.Context(), opts)
		},
	}
	opts.flags(c)
	c.Flags().StringVar(&opts.Dir, "dir", "scenarios", "directory to write the scenarios to")
	c.Flags().BoolVar(&opts.Force, "force", false, "overwrite existing files")
	c.Flags().IntVar(&opts.Fanout, "fanout", 8, "copies in each generated burst")
	c.Flags().IntVar(&opts.Trials, "trials", 10, "trials each generated scenario runs, a fresh session each")
	return c
}

func runInit(ctx context.Context, opts *InitOptions) error {
	if opts.Fanout < 2 || opts.Fanout > scenario.MaxFanout {
		return &exitError{ExitUsage, fmt.Errorf("--fanout must be from 2 to %d", scenario.MaxFanout)}
	}
	if opts.Trials < 1 || opts.Trials > scenario.MaxTrials {
		return &exitError{ExitUsage, fmt.Errorf("--trials must be from 1 to %d", scenario.MaxTrials)}
	}
	if err := safefile.Dir(opts.Dir); err != nil {
		return &exitError{ExitUsage, errors.New(reporters.Escape(err.Error()))}
	}
	sc, name, err := opts.resolve(ctx)
	if err != nil {
		return err
	}
	opts.IO.Redact(redact.New(sc.Secrets))
	tools, err := opts.ListTools(ctx, sc, name)
	if ctx.Err() != nil {
		return silentExit(ExitInterrupted)
	}
	if err != nil {
		return &exitError{ExitFailed, err}
	}
	files, err := scaffold.Project{Dir: opts.Dir, Endpoint: name, Def: sc.Endpoints[name], AdHoc: opts.adHoc(), Fanout: opts.Fanout, Trials: opts.Trials}.Files(tools)
	if err != nil {
		return &exitError{ExitFailed, err}
	}
	paths, err := safefile.Write(opts.Dir, files, safefile.Options{
		Force: opts.Force,
		Warn:  func(msg string) { fmt.Fprintf(opts.IO.ErrOut, "idemtest: %s\n", reporters.Escape(msg)) },
		Wrote: func(path string) { fmt.Fprintf(opts.IO.Out, "wrote %s\n", reporters.Escape(path)) },
	})
	if errors.Is(err, safefile.ErrExists) || errors.Is(err, safefile.ErrLink) {
		return &exitError{ExitUsage, errors.New(reporters.Escape(err.Error()))}
	}
	if err != nil {
		return &exitError{ExitFailed, err}
	}
	var todo []string
	for i, p := range paths {
		if !files[i].Fixed && scaffold.HasPlaceholder(files[i].Data) {
			todo = append(todo, p)
		}
	}
	next := "idemtest run "
	if opts.Config != "" {
		next += "--config " + reporters.ShellQuote(opts.Config) + " "
	}
	next += reporters.ShellQuote(opts.Dir)
	if len(todo) > 0 {
		fmt.Fprintf(opts.IO.Out, "fill in the values marked %s…) in %s (idemtest validate %s lists each), then:\n",
			scenario.Placeholder, reporters.Escape(strings.Join(todo, ", ")), reporters.Escape(reporters.ShellQuote(opts.Dir)))
	} else {
		fmt.Fprintf(opts.IO.Out, "next:\n")
	}
	fmt.Fprintf(opts.IO.Out, "  %s\n", reporters.Escape(next))
	if name == scenario.AdHocName {
		cfg := reporters.ShellQuote(filepath.Join(opts.Dir, scenario.ConfigName))
		fmt.Fprintf(opts.IO.Out, "  idemtest check --config %s --endpoint %s\n", reporters.Escape(cfg), name)
	}
	return nil
}
