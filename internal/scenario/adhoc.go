package scenario

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/assert"
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
}

// AdHocName is the name an ad hoc endpoint gets.
const AdHocName = "adhoc"

// AdHocScenario returns a step-less scenario with the one endpoint described.
func AdHocScenario(a AdHoc) (*Scenario, error) {
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
		m := &MCPEndpoint{Timeout: 30 * time.Second, InitTimeout: 30 * time.Second}
		for _, c := range a.MCPCommand {
			m.Command = append(m.Command, lit(c))
		}
		ep.MCP, ep.Key = m, KeySpec{Arg: "idempotencyKey"}
	}
	if a.MCPURL != "" {
		given++
		url = a.MCPURL
		ep.MCP, ep.Key = &MCPEndpoint{URL: lit(a.MCPURL), Timeout: 30 * time.Second, InitTimeout: 30 * time.Second, MaxResponseBytes: 10 << 20}, KeySpec{Arg: "idempotencyKey"}
	}
	if a.HTTPURL != "" {
		given++
		url = a.HTTPURL
		if len(a.Tools) == 0 {
			return nil, errors.New("--http-url needs --tool NAME for each tool: a plain HTTP endpoint cannot list its tools")
		}
		ep.HTTP = &HTTPEndpoint{URL: lit(a.HTTPURL), Method: "POST", Timeout: 30 * time.Second, MaxResponseBytes: 10 << 20}
		ep.Key = KeySpec{Header: "Idempotency-Key"}
		ep.Mutating = a.Tools
	}
	if given != 1 {
		return nil, errors.New("give exactly one of --endpoint, --mcp-command, --mcp-url or --http-url")
	}
	secrets := &redact.Secrets{}
	secrets.AddURL(url)
	if url != "" {
		if err := CheckURL(url); err != nil {
			return nil, errors.New(redact.New(secrets).String(err.Error()))
		}
		if herr := CheckHost(url, a.AllowHosts); herr != nil {
			return nil, fmt.Errorf("%v; allow it with --allow-host %s", herr, herr.Host)
		}
	}
	return &Scenario{Trials: 1, Endpoints: map[string]*Endpoint{AdHocName: ep}, Services: map[string]*Service{}, AllowHosts: a.AllowHosts, Secrets: secrets}, nil
}
