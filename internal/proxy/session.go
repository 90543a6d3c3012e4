package proxy

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
	"github.com/idemtest/idemtest/internal/trace"
)

// Session is one agent session through the proxy, from the agent's first message to its
// last: where the tool server is, and what the recorder injects and records. Its calls are
// what agentverdict judges.
type Session struct {
	// HTTP is the proxy an agent talks to over HTTP; the session is over stdio when its
	// Upstream is empty.
	HTTP HTTPConfig
	// Stdio starts the MCP server of a stdio session; In and Out are the agent's stream.
	Stdio   StdioConfig
	In      io.Reader
	Out     io.Writer
	Options Options
	// Record, when set, receives the session's trace (JSON Lines).
	Record io.Writer
	// Notes are what the proxy could not pass on (messages dropped at its line cap), set once
	// Run returns.
	Notes []string
	// Stopped, set once Run returns, is an MCP session the agent opened but that never got
	// going (its handshake did not complete): an error, not a session without calls.
	Stopped *SessionError
}

// Header is the session's trace header: the tool server it forwards to and how.
func (s *Session) Header() trace.Header {
	switch {
	case s.HTTP.Upstream == "":
		return trace.Header{Endpoint: strings.Join(s.Stdio.Command, " "), Transport: trace.MCPStdio}
	case s.HTTP.Plain:
		return trace.Header{Endpoint: s.HTTP.Upstream, Transport: trace.HTTP}
	}
	return trace.Header{Endpoint: s.HTTP.Upstream, Transport: trace.MCPHTTP}
}

// Run forwards the session until the agent disconnects (stdio) or ctx ends (HTTP), writing each
// call to Record as it completes, and returns what the verdict needs of its calls. A tool server that failed the agent is returned as upstream, for the verdict to
// report (and fail on); err is the proxy's own failure.
func (s *Session) Run(ctx context.Context) (calls *agentverdict.Calls, upstream *UpstreamError, err error) {
	opts := s.Options
	if s.Record != nil {
		if opts.Trace, err = trace.NewWriter(s.Record, s.Header()); err != nil {
			return nil, nil, err
		}
	}
	rec := NewRecorder(opts)
	if s.HTTP.Upstream == "" {
		err = RunStdio(ctx, rec, s.In, s.Out, s.Stdio)
	} else {
		err = RunHTTP(ctx, rec, s.HTTP)
	}
	calls, cerr := rec.Close()
	s.Notes = rec.Notes()
	if errors.As(err, &upstream) || errors.As(err, &s.Stopped) {
		err = nil
	}
	if err = errors.Join(err, cerr); err != nil {
		return nil, nil, err
	}
	return calls, upstream, nil
}
