package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/netguard"
)

// The MCP SDK's streamable HTTP client treats most HTTP-level answers as the end of the whole
// session (a 409, a redirect) or as a call that was "rejected before it reached the server"
// (a 500, a connection lost after the request was written), and it reads any answer without a
// bound. idemtest needs a per-call outcome in Jepsen's sense instead, so the HTTP client under
// the session is roundTripper: it connects through the outbound policy, and turns every
// non-2xx answer, redirect, lost connection and oversized answer to a POST into a typed error
// that says whether the request left. The SDK hands such errors back to the one call (without
// failing the session), and Endpoint.classifyError reads them.

// statusError is a non-2xx HTTP answer to an MCP POST.
type statusError struct {
	Status int
	// Detail is the JSON-RPC error message or the start of the body.
	Detail string
}

func (e *statusError) Error() string {
	_, msg := endpoint.ClassifyStatus(e.Status)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// sendError is a failed HTTP exchange; Sent says whether the request was written.
type sendError struct {
	Sent bool
	Err  error
}

func (e *sendError) Error() string { return e.Err.Error() }
func (e *sendError) Unwrap() error { return e.Err }

// tooLargeError is an answer cut off at max_response_bytes.
type tooLargeError struct{ Limit int64 }

func (e *tooLargeError) Error() string { return endpoint.TooLarge(e.Limit) }

// tooLargeCode is the JSON-RPC error code the connection substitutes for an answer cut off at
// max_response_bytes inside an SSE stream.
const tooLargeCode = -32098

// roundTripper is the HTTP client transport of an MCP streamable HTTP session.
type roundTripper struct {
	base    http.RoundTripper
	headers map[string]string
	limit   int64

	mu sync.Mutex
	// capped holds the JSON-RPC ids of calls whose SSE answer was cut off at the limit.
	capped map[any]bool
}

// streamableTransport is the SDK transport of an MCP endpoint reached over HTTP.
func (e *Endpoint) streamableTransport() sdk.Transport {
	tr := e.cfg.Policy.Transport()
	// Each request on a connection of its own: a request written onto a kept-alive connection
	// that the server was closing is indeterminate (did it read it?); one written onto a fresh
	// connection was read by whoever accepted it, and one whose connection was refused was not
	// sent at all. Loopback connections cost microseconds.
	tr.DisableKeepAlives = true
	rt := &roundTripper{base: tr, headers: e.cfg.Headers, limit: e.cfg.MaxResponseBytes, capped: map[any]bool{}}
	e.rt = rt
	return &sdk.StreamableClientTransport{
		Endpoint:   e.cfg.URL,
		HTTPClient: &http.Client{Transport: rt, CheckRedirect: netguard.RefuseRedirect},
		MaxRetries: -1,
		// One SSE event can never be larger than the whole answer; the cap below trips first.
		MaxEventSize: int(min(e.cfg.MaxResponseBytes, 1<<30)) + 1,
		// Only responses to our own calls matter; no long-lived stream to hold the server open.
		DisableStandaloneSSE: true,
	}
}

func (t *roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	var id any
	if r.Method == http.MethodPost && r.GetBody != nil {
		if body, err := r.GetBody(); err == nil {
			id = requestID(body)
		}
	}
	var wrote atomic.Bool
	ctx := httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			wrote.Store(true)
		}
	}})
	r = r.Clone(ctx)
	// Without GetBody net/http never re-sends a request by itself.
	r.GetBody = nil
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, &sendError{Sent: wrote.Load(), Err: err}
	}
	if r.Method != http.MethodPost {
		return resp, nil
	}
	if re := netguard.Redirect(resp); re != nil {
		resp.Body.Close()
		return nil, re
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, &statusError{Status: resp.StatusCode, Detail: errorDetail(body)}
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		// Read here, bounded, so that an endless answer is one call's info outcome.
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, t.limit+1))
		if err != nil {
			return nil, &sendError{Sent: true, Err: fmt.Errorf("response cut off: %w", err)}
		}
		if int64(len(body)) > t.limit {
			return nil, &tooLargeError{Limit: t.limit}
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	case "text/event-stream":
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: t.limit, over: func() {
			if id != nil {
				t.mu.Lock()
				t.capped[id] = true
				t.mu.Unlock()
			}
		}}
	}
	return resp, nil
}

// refusal is the policy's own error inside err (a redirect, a refused host), without the SDK's
// and net/http's wrapping around it; otherwise err.
func refusal(err error) error {
	var re *netguard.RedirectError
	var he *netguard.HostError
	switch {
	case errors.As(err, &re):
		return re
	case errors.As(err, &he):
		return he
	}
	return err
}

// takeCapped reports (once) whether the SSE answer to call id was cut off.
func (t *roundTripper) takeCapped(id any) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.capped[id]
	delete(t.capped, id)
	return c
}

// requestID is the JSON-RPC id of an encoded request, nil for a notification or garbage.
func requestID(body io.ReadCloser) any {
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, 16<<20))
	if err != nil {
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return nil
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		return req.ID.Raw()
	}
	return nil
}

// errorDetail is the JSON-RPC error message of a body, else its first line.
func errorDetail(body []byte) string {
	var m struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &m) == nil && m.Error != nil {
		return fmt.Sprintf("json-rpc error %d: %s", m.Error.Code, m.Error.Message)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return line
}

// errCapped ends an SSE body at the limit.
var errCapped = errors.New("answer larger than max_response_bytes")

// cappedBody ends a streamed answer once it has delivered its limit.
type cappedBody struct {
	io.ReadCloser
	left int64
	over func()
	done bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, errCapped
	}
	if b.left <= 0 {
		// At the limit: an answer that ends exactly here is whole.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		b.done = true
		b.over()
		return 0, errCapped
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
