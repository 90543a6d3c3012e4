package cmd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/ctxwait"
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

	// LoadConfig and AdHocEndpoint resolve the endpoint: the real loaders from the Factory, or
	// a test's fakes.
	LoadConfig    func(ctx context.Context, dir string, opts load.Options) (*scenario.Scenario, error)
	AdHocEndpoint func(ctx context.Context, a scenario.AdHoc) (*scenario.Scenario, error)
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

// resolve returns a step-less scenario holding the endpoint, and the endpoint's name. Resolving
// may read a config and an OpenAPI document (over the network, too): the first signal ends the
// wait at once, with ctx's error, whatever that read is doing.
func (o *EndpointOptions) resolve(ctx context.Context) (*scenario.Scenario, string, error) {
	type resolved struct {
		sc   *scenario.Scenario
		name string
		err  error
	}
	// A walked-away resolve reads only bounded input (sizes, a deadline), and the command is
	// about to exit.
	r, err := ctxwait.Run(ctx, func() resolved {
		sc, name, err := o.resolveNow(ctx)
		return resolved{sc, name, err}
	})
	if err != nil {
		return nil, "", silentExit(ExitInterrupted)
	}
	return r.sc, r.name, r.err
}

func (o *EndpointOptions) resolveNow(ctx context.Context) (*scenario.Scenario, string, error) {
	if o.Endpoint != "" {
		if o.MCPCommand != "" || o.MCPURL != "" || o.HTTPURL != "" || o.OpenAPI != "" {
			return nil, "", &exitError{ExitUsage, errors.New("give --endpoint or an ad hoc endpoint, not both")}
		}
		sc, err := o.LoadConfig(ctx, ".", load.Options{Config: o.Config, AllowHosts: o.AllowHosts})
		if err != nil {
			return nil, "", err
		}
		if _, ok := sc.Endpoints[o.Endpoint]; !ok {
			where := "no config file was found"
			if sc.Config != "" {
				where = sc.Config + " defines: " + strings.Join(slices.Sorted(maps.Keys(sc.Endpoints)), ", ")
			}
			return nil, "", &exitError{ExitUsage, fmt.Errorf("no endpoint %q (%s)", o.Endpoint, where)}
		}
		return sc, o.Endpoint, nil
	}
	sc, err := o.AdHocEndpoint(ctx, o.adHoc())
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
	if o.Endpoint != "" {
		return nil
	}
	return scaffold.Inline(name, o.adHoc())
}
