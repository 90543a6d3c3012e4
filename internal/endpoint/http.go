package endpoint

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/outcome"
)

// HTTPConfig describes a JSON-over-HTTP tool server.
type HTTPConfig struct {
	// URL is the call URL; {tool} is replaced with the tool name.
	URL     string
	Method  string
	Headers map[string]string
	// KeyHeader or KeyArg says where the idempotency key goes.
	KeyHeader string
	KeyArg    string
	// Timeout is the default client timeout of a call.
	Timeout time.Duration
	// MaxResponseBytes caps a response body; a larger one is an info outcome.
	MaxResponseBytes int64
	// Policy says which hosts may be connected to; nil allows loopback only.
	Policy *netguard.Policy
	// Refusals recognises the error-shaped successes that refuse a call (refusal: on the
	// endpoint, and the usual shapes).
	Refusals Refusals
	// Operations, when set, say per tool how it is called (tools described by an OpenAPI
	// document): a tool named here ignores URL and Method.
	Operations map[string]HTTPOperation
}

// HTTPOperation is how one tool of an HTTP endpoint is called: its method, and its URL and JSON
// body built from the call's arguments.
type HTTPOperation struct {
	Method string
	// Build returns the request URL and the body (nil: no body) for the arguments, or why
	// they cannot make a request (a path parameter is missing): the call then fails unsent.
	Build func(args map[string]any) (url string, body any, err error)
	// KeyHeader, when set, carries the key instead of the endpoint's KeyHeader.
	KeyHeader string
}

// ListedHTTP is an HTTP endpoint whose tools are known (from an OpenAPI document): it lists
// them as an MCP server does.
type ListedHTTP struct {
	*HTTP
	List []Tool
}

// Tools returns the endpoint's tools.
func (e *ListedHTTP) Tools(context.Context) ([]Tool, error) { return slices.Clone(e.List), nil }

// Tool looks one of the endpoint's tools up by name.
func (e *ListedHTTP) Tool(_ context.Context, name string) (Tool, bool, error) {
	for _, t := range e.List {
		if t.Name == name {
			return t, true, nil
		}
	}
	return Tool{}, false, nil
}

// HTTP is an HTTP tool endpoint. Sequential calls share keep-alive connections; prepared calls
// each get their own connection.
type HTTP struct {
	cfg       HTTPConfig
	client    *http.Client
	transport *http.Transport
}

// NewHTTP returns an HTTP endpoint.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	if cfg.Method == "" {
		cfg.Method = http.MethodPost
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = 10 << 20
	}
	if _, err := url.Parse(strings.ReplaceAll(cfg.URL, "{tool}", "x")); err != nil {
		return nil, fmt.Errorf("endpoint url: %w", err)
	}
	// Every connection goes through the policy, so a refused host is never dialled.
	tr := cfg.Policy.Transport()
	return &HTTP{
		cfg:       cfg,
		transport: tr,
		client: &http.Client{
			Transport: tr,
			// A redirect of a POST would silently become a GET: report it instead.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// Close drops idle connections.
func (e *HTTP) Close() error {
	e.transport.CloseIdleConnections()
	return nil
}

func (e *HTTP) newRequest(ctx context.Context, req Request) (*http.Request, error) {
	if err := CheckKey(req.Key); err != nil {
		return nil, err
	}
	args := req.Args
	if req.Key != "" && e.cfg.KeyArg != "" {
		args = make(map[string]any, len(req.Args)+1)
		for k, v := range req.Args {
			args[k] = v
		}
		args[e.cfg.KeyArg] = req.Key
	}
	if args == nil {
		args = map[string]any{}
	}
	method, u, keyHeader := e.cfg.Method, strings.ReplaceAll(e.cfg.URL, "{tool}", url.PathEscape(req.Tool)), e.cfg.KeyHeader
	var payload any = args
	if op, ok := e.cfg.Operations[req.Tool]; ok {
		method = op.Method
		var err error
		if u, payload, err = op.Build(args); err != nil {
			return nil, fmt.Errorf("%s: %w", req.Tool, err)
		}
		if op.KeyHeader != "" && keyHeader != "" {
			// The key goes in a header, and the document says which one.
			keyHeader = op.KeyHeader
		}
	}
	var rd io.Reader
	if payload != nil {
		body, err := json.Marshal(payload)
		if err != nil {
			return nil, fmt.Errorf("encode arguments: %w", err)
		}
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	// Without GetBody net/http never re-sends the request by itself: every duplicate idemtest
	// sends is one it decided to send (the transport would otherwise replay requests that carry
	// an Idempotency-Key header when a reused connection fails).
	hr.GetBody = nil
	if rd != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", "idemtest")
	for k, v := range e.cfg.Headers {
		hr.Header.Set(k, v)
	}
	if req.Key != "" && keyHeader != "" {
		hr.Header.Set(keyHeader, req.Key)
	}
	setTraceParent(hr.Header)
	return hr, nil
}

func (e *HTTP) timeout(req Request) time.Duration {
	if req.Timeout > 0 {
		return req.Timeout
	}
	return e.cfg.Timeout
}

// Call sends one request over a shared keep-alive connection.
func (e *HTTP) Call(ctx context.Context, req Request) Result {
	res := Result{Start: time.Now()}
	timeout := e.timeout(req)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hr, err := e.newRequest(ctx, req)
	if err != nil {
		return Finish(res, outcome.Fail, err.Error())
	}
	var mu sync.Mutex
	wrote := false
	var answered time.Time
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		mu.Lock()
		wrote = true
		res.Sent = time.Now()
		mu.Unlock()
	}, GotFirstResponseByte: func() {
		mu.Lock()
		answered = time.Now()
		mu.Unlock()
	}}
	res.TraceID = TraceIDOf(hr.Header.Get(TraceParentHeader))
	hr = hr.WithContext(httptrace.WithClientTrace(ctx, trace))
	resp, err := e.client.Do(hr)
	mu.Lock()
	sent := wrote
	res.Answered = answered
	mu.Unlock()
	if err != nil {
		return Finish(res, transportOutcome(ctx, err, sent), describe(ctx, err, timeout))
	}
	defer resp.Body.Close()
	return lose(e.read(ctx, res, resp, timeout), req.LoseResponse)
}

// lose discards a complete response on purpose: the server committed, the caller never knows.
func lose(res Result, discard bool) Result {
	if !discard {
		return res
	}
	res.Lost = true
	res.Discarded = res.Outcome
	res.Outcome = outcome.Info
	res.Error = fmt.Sprintf("response discarded (lose_response); the server answered %d", res.Status)
	return res
}

// transportOutcome classifies a failed exchange: nothing sent is fail, anything after is info.
func transportOutcome(ctx context.Context, err error, sent bool) outcome.Outcome {
	if ctx.Err() != nil || sent {
		return outcome.Info
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return outcome.Fail
	}
	return outcome.Info
}

func describe(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("no response within %s (timeout)", timeout)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return "cancelled"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// read reads and classifies a response.
func (e *HTTP) read(ctx context.Context, res Result, resp *http.Response, timeout time.Duration) Result {
	res.Status = resp.StatusCode
	res.Headers = make(map[string]string, len(resp.Header))
	for k, v := range resp.Header {
		res.Headers[k] = strings.Join(v, ", ")
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, e.cfg.MaxResponseBytes+1))
	if err != nil {
		return Finish(res, outcome.Info, "response cut off: "+describe(ctx, err, timeout))
	}
	if int64(len(body)) > e.cfg.MaxResponseBytes {
		return Finish(res, outcome.Info, TooLarge(e.cfg.MaxResponseBytes))
	}
	res.Body = body
	if len(bytes.TrimSpace(body)) > 0 {
		var v any
		if json.Unmarshal(body, &v) == nil {
			res.Result = v
		} else {
			res.Result = string(body)
		}
	}
	res.Replayed = isTrue(resp.Header.Get("Idempotent-Replayed"))
	if re := netguard.Redirect(resp); re != nil {
		// Nothing is sent to the target: the redirect itself is the answer, and it did nothing.
		return Finish(res, outcome.Fail, re.Error())
	}
	outcome, msg := classify(resp.StatusCode)
	res.Conflict = resp.StatusCode == http.StatusConflict
	if msg != "" {
		msg = Detail(msg, res.Result)
	}
	res.Outcome, res.Error = outcome, msg
	res = e.cfg.Refusals.Refuse(res, nil)
	return Finish(res, res.Outcome, res.Error)
}

// classify maps a status code to an outcome (DESIGN §2).
func classify(status int) (outcome.Outcome, string) {
	switch {
	case status >= 200 && status < 300:
		return outcome.OK, ""
	case status >= 500:
		return outcome.Info, fmt.Sprintf("server error %d", status)
	case status == http.StatusConflict:
		return outcome.Fail, "conflict 409"
	case status >= 400:
		return outcome.Fail, fmt.Sprintf("client error %d", status)
	}
	return outcome.Fail, fmt.Sprintf("unexpected status %d", status)
}

func isTrue(v string) bool {
	v = strings.TrimSpace(strings.ToLower(v))
	return v == "true" || v == "?1" || v == "1"
}

// Prepare dials a connection of its own for the call and encodes the request, so that Send
// only writes bytes. With LastByte it also writes everything but the held-back bytes now.
func (e *HTTP) Prepare(ctx context.Context, req Request, opts PrepareOptions) Prepared {
	p := &preparedHTTP{e: e, timeout: e.timeout(req), lose: req.LoseResponse, sent: make(chan struct{})}
	hr, err := e.newRequest(context.Background(), req)
	if err != nil {
		p.err, p.outcome = err.Error(), outcome.Fail
		return p
	}
	var buf bytes.Buffer
	if err := hr.Write(&buf); err != nil {
		p.err, p.outcome = "encode request: "+err.Error(), outcome.Fail
		return p
	}
	p.req, p.wire = hr, buf.Bytes()
	addr := hr.URL.Host
	if hr.URL.Port() == "" {
		if hr.URL.Scheme == "https" {
			addr = net.JoinHostPort(hr.URL.Hostname(), "443")
		} else {
			addr = net.JoinHostPort(hr.URL.Hostname(), "80")
		}
	}
	dctx, cancel := context.WithTimeout(ctx, min(p.timeout, 10*time.Second))
	defer cancel()
	conn, err := e.cfg.Policy.DialContext(dctx, "tcp", addr)
	if err != nil {
		p.err, p.outcome = "connect: "+err.Error(), outcome.Fail
		return p
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if hr.URL.Scheme == "https" {
		tconn := tls.Client(conn, &tls.Config{ServerName: hr.URL.Hostname(), NextProtos: []string{"http/1.1"}})
		if err := tconn.HandshakeContext(dctx); err != nil {
			conn.Close()
			p.err, p.outcome = "tls handshake: "+err.Error(), outcome.Fail
			return p
		}
		conn = tconn
	}
	p.conn = conn
	if opts.LastByte {
		p.split = splitPoint(p.wire, opts.Hold)
		_ = conn.SetWriteDeadline(time.Now().Add(p.timeout))
		if _, err := conn.Write(p.wire[:p.split]); err != nil {
			// An incomplete request is never processed: nothing happened.
			conn.Close()
			p.conn = nil
			p.err, p.outcome = "send: "+err.Error(), outcome.Fail
		}
	}
	return p
}

// splitPoint is where the held-back bytes of an encoded request begin.
func splitPoint(wire []byte, hold Hold) int {
	end := bytes.Index(wire, []byte("\r\n\r\n"))
	if end < 0 {
		return len(wire) - 1
	}
	if hold == HoldHeaderEnd || end+4 == len(wire) {
		return end + 3 // everything up to the final "\n" of the headers
	}
	return len(wire) - 1
}

type preparedHTTP struct {
	e       *HTTP
	req     *http.Request
	wire    []byte
	split   int
	conn    net.Conn
	timeout time.Duration
	err     string
	outcome outcome.Outcome
	lose    bool

	sent    chan struct{}
	start   time.Time
	sentAt  time.Time
	sendErr error
	written int
}

func (p *preparedHTTP) Abort() {
	if p.conn != nil {
		p.conn.Close()
	}
}

// Send writes the rest of the request in one write.
func (p *preparedHTTP) Send() {
	defer close(p.sent)
	p.start = time.Now()
	if p.conn == nil {
		return
	}
	_ = p.conn.SetWriteDeadline(p.start.Add(p.timeout))
	// Stamped as the final bytes are handed over, not after: an answer cannot come before
	// them, so it is never stamped earlier than this release, however the scheduler delays
	// this goroutine once the write is done (that delay made loaded machines report fan-outs
	// that did overlap as not overlapping).
	p.sentAt = time.Now()
	p.written, p.sendErr = p.conn.Write(p.wire[p.split:])
}

// Wait reads the response. It starts reading at once, so the moment the answer arrives is
// seen even while other copies are still being released.
func (p *preparedHTTP) Wait(ctx context.Context) Result {
	if p.conn == nil {
		<-p.sent
		return Finish(Result{Start: p.start}, p.outcome, p.err)
	}
	defer p.conn.Close()
	_ = p.conn.SetReadDeadline(time.Now().Add(p.timeout + time.Second))
	stop := context.AfterFunc(ctx, func() { _ = p.conn.SetDeadline(time.Now()) })
	defer stop()
	resp, rerr := http.ReadResponse(bufio.NewReader(p.conn), p.req)
	answered := time.Now()
	select {
	case <-p.sent:
	case <-ctx.Done():
		return Finish(Result{Start: p.start}, outcome.Info, "cancelled")
	}
	res := Result{Start: p.start, Sent: p.sentAt, TraceID: TraceIDOf(p.req.Header.Get(TraceParentHeader))}
	if p.sendErr != nil {
		o := outcome.Info
		if p.written == 0 && p.split == 0 {
			o = outcome.Fail
		}
		if resp != nil {
			resp.Body.Close()
		}
		return Finish(res, o, "send: "+p.sendErr.Error())
	}
	if rerr != nil {
		if ne, ok := errors.AsType[net.Error](rerr); ok && ne.Timeout() && ctx.Err() == nil {
			return Finish(res, outcome.Info, fmt.Sprintf("no response within %s (timeout)", p.timeout))
		}
		if ctx.Err() != nil {
			return Finish(res, outcome.Info, "cancelled")
		}
		return Finish(res, outcome.Info, "connection lost after sending: "+rerr.Error())
	}
	defer resp.Body.Close()
	res.Answered = answered
	return lose(p.e.read(ctx, res, resp, p.timeout), p.lose)
}
