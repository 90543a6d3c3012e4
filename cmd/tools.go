package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/openapi"
	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scaffold"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/load"
)

// EndpointOptions pick an endpoint: from the config by name, or given on the command line.
type EndpointOptions struct {
	Config     string
	Endpoint   string
	MCPCommand string
	MCPURL     string
	HTTPURL    string
	Tools      []string
	AllowHosts []string
	OpenAPI    string
}

func (o *EndpointOptions) flags(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&o.Config, "config", "", "config file (default: idemtest.yaml here or above)")
	fl.StringVar(&o.Endpoint, "endpoint", "", "an endpoint of the config")
	fl.StringVar(&o.MCPCommand, "mcp-command", "", `an MCP server to start over stdio, as a command line ("node server.js")`)
	fl.StringVar(&o.MCPURL, "mcp-url", "", "an MCP server's streamable HTTP URL")
	fl.StringVar(&o.HTTPURL, "http-url", "", "a plain HTTP tool server's URL, with {tool} (needs --tool)")
	fl.StringSliceVar(&o.Tools, "tool", nil, "a tool of the --http-url endpoint (repeatable)")
	fl.StringSliceVar(&o.AllowHosts, "allow-host", nil, "allow this non-loopback host (repeatable)")
	fl.StringVar(&o.OpenAPI, "openapi", "", "an OpenAPI 3.0/3.1 document (file or URL): its operations are the tools of an HTTP endpoint (--http-url overrides its server)")
	_ = c.RegisterFlagCompletionFunc("endpoint", completeEndpoints(&o.Config))
}

// resolve returns a step-less scenario holding the endpoint, and the endpoint's name.
func (o *EndpointOptions) resolve() (*scenario.Scenario, string, error) {
	if o.Endpoint != "" {
		if o.MCPCommand != "" || o.MCPURL != "" || o.HTTPURL != "" || o.OpenAPI != "" {
			return nil, "", &exitError{ExitUsage, errors.New("give --endpoint or an ad hoc endpoint, not both")}
		}
		sc, err := load.Config(".", load.Options{Config: o.Config, AllowHosts: o.AllowHosts})
		if err != nil {
			return nil, "", err
		}
		if _, ok := sc.Endpoints[o.Endpoint]; !ok {
			names := make([]string, 0, len(sc.Endpoints))
			for n := range sc.Endpoints {
				names = append(names, n)
			}
			where := "no config file was found"
			if sc.Config != "" {
				where = sc.Config + " defines: " + strings.Join(names, ", ")
			}
			return nil, "", &exitError{ExitUsage, fmt.Errorf("no endpoint %q (%s)", o.Endpoint, where)}
		}
		return sc, o.Endpoint, nil
	}
	sc, err := scenario.AdHocScenario(o.adHoc())
	if err != nil {
		return nil, "", &exitError{ExitUsage, err}
	}
	return sc, scenario.AdHocName, nil
}

// adHoc is the endpoint the command line describes, when it does not name one of the config.
func (o *EndpointOptions) adHoc() scenario.AdHoc {
	return scenario.AdHoc{
		MCPCommand: strings.Fields(o.MCPCommand), MCPURL: o.MCPURL, HTTPURL: o.HTTPURL, Tools: o.Tools, AllowHosts: o.AllowHosts,
		OpenAPI: o.OpenAPI,
	}
}

// inline is the endpoint the command line describes as an endpoints: entry of a scenario file,
// for the scenarios --write saves (no config defines it); nil for an endpoint of the config.
func (o *EndpointOptions) inline(name string) map[string]any {
	var ep map[string]any
	switch {
	case o.Endpoint != "":
		return nil
	case o.MCPCommand != "":
		ep = map[string]any{"mcp": map[string]any{"command": strings.Fields(o.MCPCommand)}}
	case o.MCPURL != "":
		ep = map[string]any{"mcp": map[string]any{"url": o.MCPURL}}
	case o.OpenAPI != "":
		// A file is named absolutely: the saved scenarios may live anywhere.
		src := o.OpenAPI
		if abs, err := filepath.Abs(src); err == nil && !openapi.IsURL(src) {
			src = abs
		}
		h := map[string]any{"openapi": src}
		if o.HTTPURL != "" {
			h["url"] = o.HTTPURL
		}
		ep = map[string]any{"http": h}
	default:
		ep = map[string]any{"http": map[string]any{"url": o.HTTPURL}, "mutating": o.Tools}
	}
	return map[string]any{name: ep}
}

// ToolsOptions are the inputs of idemtest tools.
type ToolsOptions struct {
	IO *IOStreams
	EndpointOptions
	JSON bool
}

// NewCmdTools builds idemtest tools.
func NewCmdTools(f *Factory, runF func(context.Context, *ToolsOptions) error) *cobra.Command {
	opts := &ToolsOptions{IO: f.IO}
	c := &cobra.Command{
		Use:   "tools",
		Short: "List an endpoint's tools and whether idemtest treats each as mutating",
		Example: `  idemtest tools --endpoint refunds_mcp
  idemtest tools --mcp-command "node server.js" --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runTools(c.Context(), opts)
		},
	}
	opts.flags(c)
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

func runTools(ctx context.Context, opts *ToolsOptions) error {
	sc, name, err := opts.resolve()
	if err != nil {
		return err
	}
	opts.IO.Redact(redact.New(sc.Secrets))
	tools, err := runner.Tools(ctx, sc, name)
	if err != nil {
		return &exitError{ExitFailed, err}
	}
	if opts.JSON {
		b, err := json.MarshalIndent(tools, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(opts.IO.Out, "%s\n", reporters.EscapeJSON(b))
		return err
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 0, 2, ' ', 0)
	if len(tools) > 0 && tools[0].Method != "" {
		return operationsTable(tw, tools)
	}
	fmt.Fprintln(tw, "TOOL\tREAD-ONLY\tIDEMPOTENT\tDESTRUCTIVE\tKEY\tSCHEMA HAS KEY\tMUTATING")
	for _, t := range tools {
		destructive := "-"
		if t.Destructive != nil {
			destructive = fmt.Sprint(*t.Destructive)
		}
		accepts := t.AcceptsKey
		if accepts == "" {
			accepts = "-"
		}
		// Tool names come from the server: escaped so that they cannot drive the terminal or forge
		// a CI log line, and clipped so that one long name keeps the columns on screen (--json
		// has them whole).
		fmt.Fprintf(tw, "%s\t%v\t%v\t%s\t%s\t%s\t%v\n", reporters.Clip(reporters.Escape(t.Name), reporters.NameWidth), t.ReadOnly, t.Idempotent, destructive,
			reporters.Escape(t.KeyCarrier), reporters.Escape(accepts), t.Mutating)
	}
	return tw.Flush()
}

// operationsTable lists the operations of an OpenAPI document: how each is called, whether it
// is mutating, where its key goes, and what the document lacks.
func operationsTable(tw *tabwriter.Writer, tools []runner.ToolInfo) error {
	fmt.Fprintln(tw, "TOOL\tMETHOD\tPATH\tREAD-ONLY\tIDEMPOTENT\tMUTATING\tKEY\tNOTE")
	for _, t := range tools {
		key, note := "-", "-"
		if t.Mutating {
			key = t.KeyCarrier
		}
		if t.Finding != "" {
			note = t.Finding
		}
		// Everything here comes from the document: escaped so that it cannot drive the terminal.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%v\t%v\t%s\t%s\n", reporters.Clip(reporters.Escape(t.Name), reporters.NameWidth), reporters.Escape(t.Method), reporters.Escape(t.Path),
			t.ReadOnly, t.Idempotent, t.Mutating, reporters.Escape(key), reporters.Escape(note))
	}
	return tw.Flush()
}

// InitOptions are the inputs of idemtest init.
type InitOptions struct {
	IO *IOStreams
	EndpointOptions
	Dir    string
	Force  bool
	Fanout int
	Trials int
}

// NewCmdInit builds idemtest init.
func NewCmdInit(f *Factory, runF func(context.Context, *InitOptions) error) *cobra.Command {
	opts := &InitOptions{IO: f.IO}
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
	sc, name, err := opts.resolve()
	if err != nil {
		return err
	}
	opts.IO.Redact(redact.New(sc.Secrets))
	tools, err := runner.Tools(ctx, sc, name)
	if err != nil {
		return &exitError{ExitFailed, err}
	}
	def := sc.Endpoints[name]
	type file struct {
		path string
		data []byte
	}
	var files []file
	taken := map[string]bool{strings.ToLower(scenario.ConfigName): true}
	for _, t := range tools {
		if !t.Mutating {
			continue
		}
		path := filepath.Join(opts.Dir, scaffold.FileName(t.Name, taken))
		tool := t.Tool
		// A tool the config names idempotent by nature is scaffolded as one that says so.
		tool.Idempotent = tool.Idempotent || def.IsNatural(t.Name)
		files = append(files, file{path, scaffold.Scenario(tool, scaffold.Options{Endpoint: name, KeyArg: def.Key.Arg, Fanout: opts.Fanout, Trials: opts.Trials})})
	}
	if len(files) == 0 {
		return &exitError{ExitFailed, fmt.Errorf("endpoint %s has no mutating tools", name)}
	}
	if name == scenario.AdHocName {
		// The endpoint exists only on this command line: write it down next to the scenarios,
		// so that they run as they are.
		abs, err := filepath.Abs(opts.Dir)
		if err != nil {
			return &exitError{ExitFailed, err}
		}
		wd, err := os.Getwd()
		if err != nil {
			return &exitError{ExitFailed, err}
		}
		rel, err := filepath.Rel(abs, wd)
		if err != nil {
			rel = wd
		}
		files = append(files, file{filepath.Join(opts.Dir, scenario.ConfigName), scaffold.Config(name, opts.adHoc(), rel)})
	}
	for _, f := range files {
		if _, err := os.Stat(f.path); err == nil && !opts.Force {
			return &exitError{ExitUsage, fmt.Errorf("%s exists; pass --force to overwrite it", reporters.Escape(f.path))}
		}
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return &exitError{ExitFailed, err}
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
			return &exitError{ExitFailed, err}
		}
		fmt.Fprintf(opts.IO.Out, "wrote %s\n", reporters.Escape(f.path))
	}
	return nil
}
