package scenario

import "time"

// The settings of an endpoint that does not give them, the same however it is defined: in
// idemtest.yaml or a scenario, by --http-url, --mcp-url or --mcp-command, or by --openapi.
const (
	defaultTimeout          = 30 * time.Second
	defaultMaxResponseBytes = 10 << 20
)

// Where an endpoint's idempotency key travels unless it says otherwise.
var (
	DefaultHTTPKey = KeySpec{Header: "Idempotency-Key"}
	DefaultMCPKey  = KeySpec{Arg: "idempotencyKey"}
)

// NewHTTPEndpoint returns an HTTP endpoint with the default settings.
func NewHTTPEndpoint() *HTTPEndpoint {
	return &HTTPEndpoint{Method: "POST", Timeout: defaultTimeout, MaxResponseBytes: defaultMaxResponseBytes}
}

// NewMCPEndpoint returns an MCP endpoint with the default settings.
func NewMCPEndpoint() *MCPEndpoint {
	return &MCPEndpoint{Timeout: defaultTimeout, InitTimeout: defaultTimeout, MaxResponseBytes: defaultMaxResponseBytes}
}
