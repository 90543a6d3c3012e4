package scenario

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/openapi"
	"github.com/idemtest/idemtest/internal/redact"
)

// AdHoc describes an endpoint given on the command line instead of in a config.
type AdHoc struct {
	MCPCommand []string
	MCPURL     string
	HTTPURL    string
	// Tools are the tools of a plain HTTP endpoint, which cannot be asked for them.
	Tools      []string
	AllowHosts []string
	// OpenAPI is a document (file or URL) whose operations are the tools of an HTTP endpoint;
	// HTTPURL then overrides its server.
	OpenAPI string
}

// AdHocName is the name an ad hoc endpoint gets.
const AdHocName = "adhoc"

// AdHocScenario returns a step-less scenario with the one endpoint described. Its read of an
// OpenAPI document file ends with ctx.
func AdHocScenario(ctx context.Context, a AdHoc) (*Scenario, error) {
	lit := func(s string) *assert.Template {
		t, _ := assert.CompileTemplate(strings.ReplaceAll(s, "{{", "{ {"), assert.Env{})
		return t
	}
	ep := &Endpoint{Name: AdHocName}
	given := 0
	var url string
	switch {
	case len(a.MCPCommand) > 0:
		given++
		if _, err := exec.LookPath(a.MCPCommand[0]); err != nil {
			return nil, fmt.Errorf("--mcp-command: %q not found: install it or give its full path", a.MCPCommand[0])
		}
		m := NewMCPEndpoint()
		for _, c := range a.MCPCommand {
			m.Command = append(m.Command, lit(c))
		}
		ep.MCP, ep.Key = m, DefaultMCPKey
	}
	if a.MCPURL != "" {
		given++
		url = a.MCPURL
		ep.MCP, ep.Key = NewMCPEndpoint(), DefaultMCPKey
		ep.MCP.URL = lit(a.MCPURL)
	}
	if a.OpenAPI != "" {
		given++
		h, err := adHocOpenAPI(ctx, a, lit)
		if err != nil {
			return nil, err
		}
		ep.HTTP, ep.Key = h, DefaultHTTPKey
		url = a.HTTPURL
	} else if a.HTTPURL != "" {
		given++
		url = a.HTTPURL
		if len(a.Tools) == 0 {
			return nil, errors.New("--http-url needs --tool NAME for each tool: a plain HTTP endpoint cannot list its tools")
		}
		ep.HTTP, ep.Key = NewHTTPEndpoint(), DefaultHTTPKey
		ep.HTTP.URL = lit(a.HTTPURL)
		ep.Mutating = a.Tools
	}
	if given != 1 {
		return nil, errors.New("give exactly one of --endpoint, --mcp-command, --mcp-url, --http-url or --openapi")
	}
	secrets := &redact.Secrets{}
	secrets.AddURL(url)
	if url != "" {
		if err := CheckURL(url); err != nil {
			return nil, errors.New(redact.New(secrets).String(err.Error()))
		}
		if herr := CheckHost(url, a.AllowHosts); herr != nil {
			return nil, fmt.Errorf("%w; allow it with --allow-host %s", herr, herr.Host)
		}
	}
	return &Scenario{Trials: 1, Endpoints: map[string]*Endpoint{AdHocName: ep}, Services: map[string]*Service{}, AllowHosts: a.AllowHosts, Secrets: secrets}, nil
}

// adHocOpenAPI is the HTTP endpoint of --openapi: a file is loaded now (a bad document is bad
// input); a URL is checked against the outbound policy and read when the endpoint is used.
func adHocOpenAPI(ctx context.Context, a AdHoc, lit func(string) *assert.Template) (*HTTPEndpoint, error) {
	h := NewHTTPEndpoint()
	h.OpenAPI = lit(a.OpenAPI)
	if a.HTTPURL != "" {
		h.URL = lit(a.HTTPURL)
	}
	if openapi.IsURL(a.OpenAPI) {
		if err := CheckURL(a.OpenAPI); err != nil {
			return nil, fmt.Errorf("--openapi: %w", err)
		}
		if herr := CheckHost(a.OpenAPI, a.AllowHosts); herr != nil {
			return nil, fmt.Errorf("--openapi: %w; allow it with --allow-host %s", herr, herr.Host)
		}
		return h, nil
	}
	spec, err := openapi.Load(ctx, a.OpenAPI, nil)
	if err != nil {
		return nil, err
	}
	h.Spec = spec
	return h, nil
}
