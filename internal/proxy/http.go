package proxy

import (
	"context"
	"errors"
	"io"
)

// HTTPConfig is a proxy served on a loopback address in front of an HTTP tool server.
type HTTPConfig struct {
	Listen   string
	Upstream string
	// Plain selects JSON-over-HTTP tools (POST /tools/{name}, key in a header) instead of MCP
	// streamable HTTP.
	Plain bool
	// Ready, when set, receives a line with the address once the proxy listens.
	Ready io.Writer
}

// RunHTTP serves the proxy until ctx is cancelled.
func RunHTTP(ctx context.Context, rec *Recorder, cfg HTTPConfig) error {
	return errors.New("HTTP proxy: not implemented yet")
}
