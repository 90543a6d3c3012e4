package proxy

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/idemtest/idemtest/internal/trace"
)

// Session is one agent session through the proxy, from the agent's first message to the
// verdict: where the tool server is, what the recorder injects and records, and how the agent
// is judged.
type Session struct {
	// HTTP is the proxy an agent talks to over HTTP; the session is over stdio when its
	// Upstream is empty.
	HTTP HTTPConfig
	// Stdio starts the MCP server of a stdio session; In and Out are the agent's stream.
	Stdio   StdioConfig
	In      io.Reader
	Out     io.Writer
	Options Options
	Judge   JudgeOptions
	// Record, when set, receives the session's trace (JSON Lines).
	Record io.Writer
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

// Run forwards the session until the agent disconnects (stdio) or ctx ends (HTTP), then
// judges the agent. A tool server that failed the agent is reported in the verdict's Error,
// which fails it; an error is the proxy's own.
func (s *Session) Run(ctx context.Context) (Verdict, error) {
	opts := s.Options
	if s.Record != nil {
		var err error
		if opts.Trace, err = trace.NewWriter(s.Record, s.Header()); err != nil {
			return Verdict{}, err
		}
	}
	rec := NewRecorder(opts)
	var err error
	if s.HTTP.Upstream == "" {
		err = RunStdio(ctx, rec, s.In, s.Out, s.Stdio)
	} else {
		err = RunHTTP(ctx, rec, s.HTTP)
	}
	calls, cerr := rec.Close()
	var upErr *UpstreamError
	if errors.As(err, &upErr) {
		err = nil
	}
	if err = errors.Join(err, cerr); err != nil {
		return Verdict{}, err
	}
	v := Judge(calls, s.Judge)
	if upErr != nil {
		v.Error = upErr.Error()
	}
	return v, nil
}
