package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/proc"
)

// Config describes an MCP server: a command spoken to over stdio, or a streamable HTTP URL.
type Config struct {
	Command []string
	Env     []string
	Dir     string
	URL     string
	Headers map[string]string
	// KeyArg or KeyMeta says where the idempotency key goes.
	KeyArg  string
	KeyMeta string
	// Timeout is the default client timeout of a call; InitTimeout bounds the handshake.
	Timeout     time.Duration
	InitTimeout time.Duration
	// ConflictMatch recognises an isError result that reports an in-flight duplicate.
	ConflictMatch *regexp.Regexp
	// Refusals recognises the error-shaped successes that refuse a call (refusal: on the
	// endpoint, and the usual shapes): a result without isError that is one is a refusal.
	Refusals endpoint.Refusals
	// Stderr receives a stdio server's standard error (for reports); may be nil.
	Stderr *proc.Tail
	// Policy says which hosts an HTTP server may be reached on; nil allows loopback only.
	Policy *netguard.Policy
	// MaxResponseBytes caps an answer (an HTTP body, an SSE stream, a stdio line); a larger one
	// is an info outcome and the session carries on.
	MaxResponseBytes int64
	// Listing bounds tools/list (zero: DefaultListing).
	Listing Listing
}

// Listing bounds how long and how far idemtest follows a server's tools/list pagination: a
// server whose nextCursor never ends, or that lists without end, fails the listing with a
// *ListError instead of holding the command for ever.
type Listing struct {
	// MaxPages caps the pages (tools/list requests).
	MaxPages int
	// MaxTools caps the tools listed, over all pages.
	MaxTools int
	// MaxBytes caps what is kept of the tools' definitions (names, descriptions, input
	// schemas), over all pages.
	MaxBytes int64
	// Timeout caps the whole listing.
	Timeout time.Duration
}

// DefaultListing is the bound of every listing: far above any real server (the largest seen
// list a few hundred tools on a few pages), well below what would hold a CI job.
var DefaultListing = Listing{MaxPages: 1000, MaxTools: 10000, MaxBytes: 64 << 20, Timeout: 60 * time.Second}

// ListError is a tools/list that reached one of the Listing caps.
type ListError struct {
	// Server is the server's command or URL.
	Server string
	// Cap names the cap reached: "pages", "tools", "bytes" or "time".
	Cap string
	// Limit is the cap's value, as written in the message.
	Limit string
}

func (e *ListError) Error() string {
	what := map[string]string{
		"pages": "its tools/list pagination did not end within " + e.Limit + " pages (nextCursor kept coming)",
		"tools": "it listed more than " + e.Limit + " tools",
		"bytes": "its tools' definitions took more than " + e.Limit,
		"time":  "it did not finish listing its tools within " + e.Limit,
	}[e.Cap]
	return fmt.Sprintf("list tools of mcp server %s: stopped at idemtest's listing cap: %s", e.Server, what)
}

// Endpoint is an MCP tool endpoint. All calls share one session; concurrent calls are concurrent
// JSON-RPC requests on it.
type Endpoint struct {
	cfg Config

	mu      sync.Mutex
	session *sdk.ClientSession
	conn    *losingConn
	rt      *roundTripper // the HTTP client transport, nil for stdio
	seq     atomic.Int64  // numbers calls, to learn whether each was written
	cmd     *exec.Cmd
	tools   map[string]endpoint.Tool // by name, once listed
	sorted  []endpoint.Tool          // the same, sorted by name
	err     error
}

// New returns an MCP endpoint; it connects on first use.
func New(cfg Config) *Endpoint {
	if cfg.KeyArg == "" && cfg.KeyMeta == "" {
		cfg.KeyArg = "idempotencyKey"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.InitTimeout == 0 {
		cfg.InitTimeout = 30 * time.Second
	}
	if cfg.ConflictMatch == nil {
		cfg.ConflictMatch = endpoint.DefaultConflictMatch
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = 10 << 20
	}
	d := DefaultListing
	if cfg.Listing.MaxPages == 0 {
		cfg.Listing.MaxPages = d.MaxPages
	}
	if cfg.Listing.MaxTools == 0 {
		cfg.Listing.MaxTools = d.MaxTools
	}
	if cfg.Listing.MaxBytes == 0 {
		cfg.Listing.MaxBytes = d.MaxBytes
	}
	if cfg.Listing.Timeout == 0 {
		cfg.Listing.Timeout = d.Timeout
	}
	return &Endpoint{cfg: cfg}
}

func (e *Endpoint) describe() string {
	if e.cfg.URL != "" {
		return e.cfg.URL
	}
	return strings.Join(e.cfg.Command, " ")
}

// connect starts the server (stdio) or opens the session (HTTP) once.
func (e *Endpoint) connect(ctx context.Context) (*sdk.ClientSession, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session != nil || e.err != nil {
		return e.session, e.err
	}
	var base sdk.Transport
	if e.cfg.URL != "" {
		base = e.streamableTransport()
	} else {
		cmd := exec.Command(e.cfg.Command[0], e.cfg.Command[1:]...)
		cmd.Env = append(os.Environ(), e.cfg.Env...)
		cmd.Dir = e.cfg.Dir
		proc.Isolate(cmd)
		// Should idemtest be killed (SIGKILL, a crash) instead of closing the session, the
		// shepherd kills the server and everything it started, setsid daemons included.
		if err := proc.Shepherd(cmd); err != nil {
			e.err = fmt.Errorf("mcp server %s: %w", e.describe(), err)
			return nil, e.err
		}
		st := &stdioTransport{cmd: cmd, limit: e.cfg.MaxResponseBytes, grace: 2 * time.Second}
		if e.cfg.Stderr != nil {
			// Through a pipe the Tail reads itself, so that a mark taken after an answer holds
			// every line the server wrote before it.
			if w, err := e.cfg.Stderr.Writer(); err == nil {
				cmd.Stderr, st.stderr = w, w
			} else {
				cmd.Stderr = e.cfg.Stderr
			}
		}
		e.cmd = cmd
		base = st
	}
	t := &losingTransport{base: base, set: func(c *losingConn) { c.capped, c.stdio = e.rt.takeCapped, e.cfg.URL == ""; e.conn = c }}
	client := sdk.NewClient(&sdk.Implementation{Name: "idemtest", Version: "1"}, nil)
	ictx, cancel := context.WithTimeout(ctx, e.cfg.InitTimeout)
	defer cancel()
	cs, err := client.Connect(ictx, t, nil)
	if err != nil {
		e.killGroup()
		err = refusal(err)
		switch {
		case errors.Is(ictx.Err(), context.DeadlineExceeded):
			e.err = fmt.Errorf("mcp server %s did not answer initialize within %s", e.describe(), e.cfg.InitTimeout)
		case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
			e.err = fmt.Errorf("mcp server command %q not found: %w", e.cfg.Command[0], err)
		default:
			e.err = fmt.Errorf("connect to mcp server %s: %w%s", e.describe(), err, e.stderrTail())
		}
		return nil, e.err
	}
	e.session = cs
	return cs, nil
}

func (e *Endpoint) stderrTail() string {
	if e.cfg.Stderr == nil {
		return ""
	}
	if s := strings.TrimSpace(e.cfg.Stderr.String()); s != "" {
		return "; its stderr:\n" + s
	}
	return ""
}

func (e *Endpoint) killGroup() {
	if e.cmd != nil && e.cmd.Process != nil {
		proc.Kill(e.cmd.Process.Pid)
	}
}

// Close ends the session and stops a stdio server with its whole process group.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	cs := e.session
	e.mu.Unlock()
	if cs != nil {
		done := make(chan struct{})
		go func() { _ = cs.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}
	e.killGroup()
	if e.cfg.Stderr != nil {
		_ = e.cfg.Stderr.Close()
	}
	return nil
}

// Tools lists the server's tools, sorted by name.
func (e *Endpoint) Tools(ctx context.Context) ([]endpoint.Tool, error) {
	if err := e.listOnce(ctx); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.sorted), nil
}

// Tool looks one of the server's tools up by name.
func (e *Endpoint) Tool(ctx context.Context, name string) (endpoint.Tool, bool, error) {
	if err := e.listOnce(ctx); err != nil {
		return endpoint.Tool{}, false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.tools[name]
	return t, ok, nil
}

// listOnce lists the tools the first time they are asked for and keeps them, by name and
// sorted, so that later look-ups neither ask the server nor sort again.
func (e *Endpoint) listOnce(ctx context.Context) error {
	cs, err := e.connect(ctx)
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.tools != nil {
		e.mu.Unlock()
		return nil
	}
	conn := e.conn
	e.mu.Unlock()
	tools, err := e.list(ctx, cs, conn)
	if err != nil {
		return err
	}
	sorted := sortedTools(tools)
	e.mu.Lock()
	e.tools, e.sorted = tools, sorted
	e.mu.Unlock()
	return nil
}

// list follows the server's pagination within the Listing caps.
func (e *Endpoint) list(ctx context.Context, cs *sdk.ClientSession, conn *losingConn) (map[string]endpoint.Tool, error) {
	lim := e.cfg.Listing
	lctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	capped := func(c string, limit any) error {
		return &ListError{Server: e.describe(), Cap: c, Limit: fmt.Sprint(limit)}
	}
	tools := map[string]endpoint.Tool{}
	var listed int
	var kept int64
	params := &sdk.ListToolsParams{}
	for page := 1; ; page++ {
		if page > lim.MaxPages {
			return nil, capped("pages", lim.MaxPages)
		}
		res, err := cs.ListTools(lctx, params)
		if err != nil {
			if ctx.Err() == nil && errors.Is(lctx.Err(), context.DeadlineExceeded) {
				return nil, capped("time", lim.Timeout)
			}
			return nil, fmt.Errorf("list tools of %s: %w", e.describe(), err)
		}
		for _, t := range res.Tools {
			if listed++; listed > lim.MaxTools {
				return nil, capped("tools", lim.MaxTools)
			}
			tool := endpoint.Tool{Name: t.Name, Description: t.Description}
			if a := t.Annotations; a != nil {
				tool.ReadOnly, tool.Idempotent, tool.Destructive = a.ReadOnlyHint, a.IdempotentHint, a.DestructiveHint
			}
			size := int64(len(t.Name) + len(t.Description))
			if m, ok := t.InputSchema.(map[string]any); ok {
				tool.InputSchema = m
				b, _ := json.Marshal(m)
				size += int64(len(b))
			}
			if kept += size; kept > lim.MaxBytes {
				return nil, capped("bytes", fmt.Sprintf("%d bytes", lim.MaxBytes))
			}
			tool.TaskSupport = conn.taskSupport(t.Name)
			tools[t.Name] = tool
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
}

func sortedTools(m map[string]endpoint.Tool) []endpoint.Tool {
	out := make([]endpoint.Tool, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// loseMarker marks a call whose response the connection must discard; it is removed before the
// request is written, so the server never sees it.
const loseMarker = "io.idemtest/lose-response"

// lostCode is the JSON-RPC error code the connection substitutes for a discarded response.
const lostCode = -32099

// callMarker numbers a call in its _meta so that the connection can say whether it was written;
// like loseMarker it is removed before the request is written.
const callMarker = "io.idemtest/call"

// Call makes one tools/call.
func (e *Endpoint) Call(ctx context.Context, req endpoint.Request) endpoint.Result {
	res := endpoint.Result{Start: time.Now()}
	if err := endpoint.CheckKey(req.Key); err != nil {
		return endpoint.Finish(res, outcome.Fail, err.Error())
	}
	cs, err := e.connect(ctx)
	if err != nil {
		return endpoint.Finish(res, outcome.Fail, err.Error())
	}
	timeout := req.Timeout
	if timeout == 0 {
		timeout = e.cfg.Timeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	params := &sdk.CallToolParams{Name: req.Tool, Arguments: e.arguments(req)}
	meta := sdk.Meta{}
	if req.Key != "" && e.cfg.KeyMeta != "" {
		meta[e.cfg.KeyMeta] = req.Key
	}
	if req.LoseResponse {
		meta[loseMarker] = true
	}
	// W3C trace context travels in params._meta (the MCP convention), so that the server's
	// spans of the call are in the trace the report names.
	tp := endpoint.NewTraceParent()
	meta[endpoint.TraceParentHeader] = tp
	res.TraceID = endpoint.TraceIDOf(tp)
	n := e.seq.Add(1)
	meta[callMarker] = n
	params.Meta = meta
	res.Sent = time.Now()
	out, err := cs.CallTool(cctx, params)
	written := e.conn.written(n)
	if sent, answered := e.conn.timesOf(n); !sent.IsZero() {
		// When the request really left and its answer really came, not when the call was
		// asked for and returned: a fan-out's overlap is judged on these.
		res.Sent, res.Answered = sent, answered
	}
	if err != nil {
		return e.classifyError(cctx, res, err, timeout, written)
	}
	return e.classify(res, out)
}

func (e *Endpoint) arguments(req endpoint.Request) map[string]any {
	args := make(map[string]any, len(req.Args)+1)
	for k, v := range req.Args {
		args[k] = v
	}
	if req.Key != "" && e.cfg.KeyArg != "" {
		args[e.cfg.KeyArg] = req.Key
	}
	return args
}

// classifyError classifies a call that got no tool result (DESIGN §2): an HTTP answer by its
// status (5xx info, 409 fail and conflict, other 4xx fail), a redirect or a refused host fail, a
// call that was never written fail, a timeout or a connection lost after writing info.
func (e *Endpoint) classifyError(ctx context.Context, res endpoint.Result, err error, timeout time.Duration, written bool) endpoint.Result {
	var (
		werr   *jsonrpc.Error
		status *statusError
		send   *sendError
		large  *tooLargeError
	)
	switch {
	case errors.As(err, &werr) && werr.Code == lostCode:
		// The discarded answer travels in the error's data: the verdict judges it.
		var out sdk.CallToolResult
		if len(werr.Data) > 0 && json.Unmarshal(werr.Data, &out) == nil {
			res = e.classify(res, &out)
			res.Discarded = res.Outcome
		}
		res.Lost = true
		return endpoint.Finish(res, outcome.Info, "response discarded (lose_response)")
	case errors.As(err, &werr) && werr.Code == tooLargeCode, errors.As(err, &large):
		return endpoint.Finish(res, outcome.Info, fmt.Sprintf("answer larger than %d bytes (raise max_response_bytes on the endpoint)", e.cfg.MaxResponseBytes))
	case errors.As(err, &status):
		res.Status = status.Status
		res.Conflict = status.Status == http.StatusConflict
		o, _ := endpoint.ClassifyStatus(status.Status)
		return endpoint.Finish(res, o, status.Error())
	case netguard.Refused(err):
		// Nothing reached the refused host.
		r := refusal(err)
		if re, ok := errors.AsType[*netguard.RedirectError](r); ok {
			res.Status = re.Status
			return endpoint.Finish(res, outcome.Fail, re.Error())
		}
		return endpoint.Finish(res, outcome.Fail, fmt.Sprintf("not sent: %v; allow it with allow_hosts or --allow-host", r))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return endpoint.Finish(res, outcome.Info, fmt.Sprintf("no response within %s (timeout; the SDK sent notifications/cancelled)", timeout))
	case ctx.Err() != nil:
		return endpoint.Finish(res, outcome.Info, "cancelled")
	case errors.As(err, &send):
		if send.Sent {
			return endpoint.Finish(res, outcome.Info, "connection lost after sending: "+send.Err.Error())
		}
		return endpoint.Finish(res, outcome.Fail, "not sent: "+send.Err.Error())
	case !written:
		// The request never left: the session had already failed, or the server is gone.
		return endpoint.Finish(res, outcome.Fail, "not sent: "+e.lostMessage(err))
	case errors.As(err, &werr):
		// The server answered with a JSON-RPC error: the call did not run.
		return endpoint.Finish(res, outcome.Fail, fmt.Sprintf("json-rpc error %d: %s", werr.Code, werr.Message))
	}
	return endpoint.Finish(res, outcome.Info, e.lostMessage(err))
}

// lostMessage describes a connection that failed under a call.
func (e *Endpoint) lostMessage(err error) string {
	if e.cfg.URL == "" && frameTooLarge(err) {
		return fmt.Sprintf("idemtest stopped reading mcp server %s: one message spread over several lines passed %d bytes (MCP over stdio sends a message per line)", e.describe(), frameLimit(e.cfg.MaxResponseBytes))
	}
	if e.conn != nil {
		select {
		case <-e.conn.closed:
			return fmt.Sprintf("mcp server %s closed the connection (it may have exited): %v%s", e.describe(), err, e.stderrTail())
		default:
		}
	}
	return "connection lost: " + err.Error()
}

// replayMarks are the _meta fields by which a server says an answer is a replay of a stored one.
var replayMarks = []string{"idempotentReplayed", "replayed", "io.idemtest/replayed"}

// Replayed reports whether a tool result's _meta marks it as a replay of a stored answer.
func Replayed(meta map[string]any) bool {
	for _, k := range replayMarks {
		if b, ok := meta[k].(bool); ok && b {
			return true
		}
	}
	return false
}

// classify turns a CallToolResult into an outcome: isError is fail (and conflict when it reports
// an in-flight duplicate); the result is structuredContent, else text parsed as JSON, else text.
func (e *Endpoint) classify(res endpoint.Result, out *sdk.CallToolResult) endpoint.Result {
	var text strings.Builder
	for _, c := range out.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	switch {
	case out.StructuredContent != nil:
		res.Result = normalise(out.StructuredContent)
	case text.Len() > 0:
		var v any
		if json.Unmarshal([]byte(text.String()), &v) == nil {
			res.Result = v
		} else {
			res.Result = text.String()
		}
	}
	res.Body, _ = json.Marshal(out)
	res.Replayed = Replayed(out.Meta)
	if !out.IsError {
		res.Outcome = outcome.OK
		res = e.cfg.Refusals.Refuse(res, e.cfg.ConflictMatch)
		return endpoint.Finish(res, res.Outcome, res.Error)
	}
	res.Conflict = endpoint.Conflict(res.Result, text.String(), e.cfg.ConflictMatch)
	// The tool's own words: its text content, or the message of the JSON error object it holds
	// (else of the structured content), cut as an HTTP error's are.
	var said any = strings.TrimSpace(text.String())
	if said == "" {
		said = res.Result
	} else if v, ok := said.(string); ok && json.Valid([]byte(v)) {
		_ = json.Unmarshal([]byte(v), &said)
	}
	if msg := endpoint.Detail("tool error", said); msg != "tool error" {
		return endpoint.Finish(res, outcome.Fail, msg)
	}
	return endpoint.Finish(res, outcome.Fail, "tool returned isError")
}

// normalise round-trips a value through JSON so that assertions see plain maps and float64s.
func normalise(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// Prepare for MCP readies the session; Send starts the request, as one of several concurrent
// JSON-RPC requests on it. There are no bytes to hold back, so LastByte changes nothing.
func (e *Endpoint) Prepare(ctx context.Context, req endpoint.Request, _ endpoint.PrepareOptions) endpoint.Prepared {
	_, _ = e.connect(ctx)
	return &prepared{e: e, req: req, ctx: ctx, done: make(chan endpoint.Result, 1)}
}

type prepared struct {
	e    *Endpoint
	req  endpoint.Request
	ctx  context.Context
	done chan endpoint.Result
	sent time.Time
}

func (p *prepared) Send() {
	p.sent = time.Now()
	go func() {
		res := p.e.Call(p.ctx, p.req)
		if res.Answered.IsZero() {
			res.Answered = res.Received
		}
		p.done <- res
	}()
}

func (p *prepared) Wait(ctx context.Context) endpoint.Result {
	select {
	case res := <-p.done:
		// res.Sent is when the request was written, at or after the release (p.sent).
		return res
	case <-ctx.Done():
		return endpoint.Finish(endpoint.Result{Start: p.sent}, outcome.Info, "cancelled")
	}
}

func (p *prepared) Abort() {}

// losingTransport wraps a transport's connection so that the response to a marked call is
// dropped on arrival and replaced, for the client only, by an error: the server finishes and
// answers, and hears nothing more (no cancellation).
type losingTransport struct {
	base sdk.Transport
	set  func(*losingConn)
}

func (t *losingTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	lc := &losingConn{Connection: c, drop: map[any]bool{}, wrote: map[int64]bool{}, closed: make(chan struct{})}
	t.set(lc)
	return lc, nil
}

type losingConn struct {
	sdk.Connection
	mu    sync.Mutex
	drop  map[any]bool
	wrote map[int64]bool // by call marker: whether the call was written
	// times are, by call marker, when the call was handed to the connection and when its
	// answer was read; byID finds the call marker of an answer.
	times  map[int64]*callTimes
	byID   map[any]int64
	stdio  bool
	capped func(id any) bool
	closed chan struct{}
	// lists are the ids of tools/list requests in flight; tasks is each listed tool's
	// execution.taskSupport, a field the SDK's Tool type does not keep.
	lists map[any]bool
	tasks map[string]string

	closeOnce sync.Once
}

func (c *losingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	var call int64
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" && req.ID.IsValid() {
		c.mu.Lock()
		if c.lists == nil {
			c.lists = map[any]bool{}
		}
		c.lists[req.ID.Raw()] = true
		c.mu.Unlock()
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" && req.ID.IsValid() {
		var params map[string]json.RawMessage
		if json.Unmarshal(req.Params, &params) == nil {
			var meta map[string]any
			if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) == nil {
				_, lose := meta[loseMarker]
				if n, ok := meta[callMarker].(float64); ok {
					call = int64(n)
				}
				if lose || call != 0 {
					delete(meta, loseMarker)
					delete(meta, callMarker)
					if len(meta) == 0 {
						delete(params, "_meta")
					} else {
						params["_meta"], _ = json.Marshal(meta)
					}
					clean, _ := json.Marshal(params)
					copied := *req
					copied.Params = clean
					msg = &copied
				}
				if lose {
					c.mu.Lock()
					c.drop[req.ID.Raw()] = true
					c.mu.Unlock()
				}
			}
		}
	}
	sent := time.Now()
	err := c.Connection.Write(ctx, msg)
	if c.stdio {
		// Over a pipe the write returns once the server could take the last byte; over HTTP
		// it returns with the answer's headers, so the request left when the write began.
		sent = time.Now()
	}
	if call != 0 {
		c.mu.Lock()
		c.wrote[call] = err == nil
		if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
			if c.times == nil {
				c.times, c.byID = map[int64]*callTimes{}, map[any]int64{}
			}
			c.times[call] = &callTimes{id: req.ID.Raw(), sent: sent}
			c.byID[req.ID.Raw()] = call
		}
		c.mu.Unlock()
	}
	return err
}

// callTimes are when a call was handed to the connection and when its answer was read.
type callTimes struct {
	id             any
	sent, answered time.Time
}

// timesOf returns (once) when call n was handed to the connection and when its answer was read
// (zero when unknown).
func (c *losingConn) timesOf(n int64) (sent, answered time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.times[n]
	if t == nil {
		return
	}
	delete(c.times, n)
	delete(c.byID, t.id)
	return t.sent, t.answered
}

// written reports (once) whether call n was written to the server. An HTTP exchange that failed
// says so itself in its error; a call the session refused before writing never gets here.
func (c *losingConn) written(n int64) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.wrote[n]
	delete(c.wrote, n)
	return w
}

func (c *losingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		now := time.Now()
		c.mu.Lock()
		if n, ok := c.byID[resp.ID.Raw()]; ok {
			c.times[n].answered = now
			delete(c.byID, resp.ID.Raw())
		}
		lost := c.drop[resp.ID.Raw()]
		delete(c.drop, resp.ID.Raw())
		list := c.lists[resp.ID.Raw()]
		delete(c.lists, resp.ID.Raw())
		c.mu.Unlock()
		if list && resp.Error == nil {
			c.noteTasks(resp.Result)
		}
		switch {
		case c.capped != nil && c.capped(resp.ID.Raw()):
			// The SDK reports an SSE answer cut off at the limit as a stream that ended early.
			return &jsonrpc.Response{ID: resp.ID, Error: &jsonrpc.Error{Code: tooLargeCode, Message: "answer larger than max_response_bytes"}}, nil
		case lost:
			// The discarded answer travels in the error's data: the verdict judges it.
			data := resp.Result
			if resp.Error != nil {
				data = nil
			}
			return &jsonrpc.Response{ID: resp.ID, Error: &jsonrpc.Error{Code: lostCode, Message: "response discarded by idemtest", Data: data}}, nil
		}
	}
	return msg, err
}

// noteTasks keeps execution.taskSupport of each tool in a raw tools/list result.
func (c *losingConn) noteTasks(raw json.RawMessage) {
	var page struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(raw, &page) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range page.Tools {
		if t.Execution.TaskSupport == "" {
			continue
		}
		if c.tasks == nil {
			c.tasks = map[string]string{}
		}
		c.tasks[t.Name] = t.Execution.TaskSupport
	}
}

// taskSupport is the tool's execution.taskSupport as tools/list gave it ("" when not given).
func (c *losingConn) taskSupport(name string) string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tasks[name]
}

func (c *losingConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}
