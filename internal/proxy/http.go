package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/endpoint/mcp"
	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/proxy/fault"
)

// HTTPConfig is a proxy served on a loopback address in front of an HTTP tool server.
type HTTPConfig struct {
	Listen string
	// Upstream is the tool server: its scheme and host receive every request, with the
	// request's path (a request for "/" goes to Upstream's own path).
	Upstream string
	// Plain selects JSON-over-HTTP tools (POST …/{tool}, the key in a header) instead of MCP
	// streamable HTTP.
	Plain bool
	// AllowHosts are the non-loopback hosts the upstream may be on (the outbound policy).
	AllowHosts []string
	// Ready, when set, receives "idemtest proxy: listening on http://ADDR" once the proxy
	// listens.
	Ready io.Writer
}

// maxBody bounds a request or response body the proxy reads whole.
const maxBody = 64 << 20

// RunHTTP serves the proxy until ctx is cancelled; in-flight requests are then cut off.
func RunHTTP(ctx context.Context, rec *Recorder, cfg HTTPConfig) error {
	up, err := url.Parse(cfg.Upstream)
	if err != nil || up.Host == "" || (up.Scheme != "http" && up.Scheme != "https") {
		return fmt.Errorf("--upstream %q: want an http:// or https:// URL", cfg.Upstream)
	}
	policy := netguard.New(cfg.AllowHosts)
	if err := policy.CheckURL(cfg.Upstream); err != nil {
		return fmt.Errorf("--upstream %s: %w", cfg.Upstream, err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	base, stop := context.WithCancel(context.Background())
	defer stop()
	// Every connection upstream is checked by the outbound policy; bodies pass as they are, and
	// a redirect goes back to the agent, which decides.
	tr := policy.Transport()
	tr.DisableCompression = true
	h := &httpProxy{
		rec: rec, up: up, base: base, mcp: newMCPSession(rec),
		client: &http.Client{
			Transport:     tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	handler := http.HandlerFunc(h.serveMCP)
	if cfg.Plain {
		handler = h.servePlain
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second}
	if cfg.Ready != nil {
		fmt.Fprintf(cfg.Ready, "idemtest proxy: listening on http://%s (upstream %s)\n", ln.Addr(), cfg.Upstream)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	stop()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		_ = srv.Close()
	}
	h.wg.Wait()
	h.client.CloseIdleConnections()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if what := h.mcp.initProblem(); what != "" && !cfg.Plain {
		h.upMu.Lock()
		defer h.upMu.Unlock()
		return &UpstreamError{URL: cfg.Upstream, What: what, LastAnswer: h.upLast}
	}
	if se := h.mcp.sessionError(); se != nil && !cfg.Plain {
		return se
	}
	return nil
}

type httpProxy struct {
	rec *Recorder
	up  *url.URL
	// base ends when the proxy stops: held answers are released and upstream requests cut.
	base   context.Context
	client *http.Client
	mcp    *mcpSession
	wg     sync.WaitGroup // handlers that outlive Shutdown's grace (held answers)

	upMu sync.Mutex
	// upLast is the latest failure of the upstream (an error, or a status that was no MCP
	// answer), for an UpstreamError.
	upLast string
}

// upstreamFailed notes a failure of the upstream.
func (h *httpProxy) upstreamFailed(what string) {
	h.upMu.Lock()
	defer h.upMu.Unlock()
	h.upLast = what
}

// target is where a request goes upstream.
func (h *httpProxy) target(r *http.Request) string {
	u := *h.up
	if r.URL.Path != "/" && r.URL.Path != "" {
		u.Path = r.URL.Path
	}
	u.RawQuery = r.URL.RawQuery
	return u.String()
}

// hopHeaders are not forwarded (RFC 9110 §7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append([]string(nil), vs...)
	}
	for _, k := range hopHeaders {
		dst.Del(k)
	}
}

// upstreamCtx is the context of a request sent upstream on behalf of r: it ends with the agent's
// request, unless detached (the server must finish whatever the agent does), and when the
// proxy stops.
func (h *httpProxy) upstreamCtx(r *http.Request, detach bool) (context.Context, context.CancelFunc) {
	parent := r.Context()
	if detach {
		parent = context.WithoutCancel(parent)
	}
	ctx, cancel := context.WithCancel(parent)
	unhook := context.AfterFunc(h.base, cancel)
	return ctx, func() { unhook(); cancel() }
}

// forward sends the request upstream with body. Without GetBody net/http never re-sends it on
// its own: every duplicate the server sees is one the agent sent.
func (h *httpProxy) forward(ctx context.Context, r *http.Request, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, r.Method, h.target(r), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.GetBody = nil
	copyHeaders(req.Header, r.Header)
	return h.client.Do(req)
}

// hold keeps a request open without an answer until the agent gives up or the proxy stops.
func (h *httpProxy) hold(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-h.base.Done():
	}
}

// wait pauses for d unless the agent gives up or the proxy stops; it reports whether to go on.
func (h *httpProxy) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-h.base.Done():
	}
	return false
}

// reset closes the agent's connection without an answer: TCP RST, as a network that lost the
// response would look to a client that had sent its request.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// readRequest reads the agent's request body whole, answering 400 when it cannot.
func readRequest(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "idemtest proxy: read request: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return body, true
}

// servePlain proxies a JSON-over-HTTP tool API: a POST, PUT, PATCH or DELETE is a call of the
// tool named by the last path segment, its body the arguments, its key in the key header.
func (h *httpProxy) servePlain(w http.ResponseWriter, r *http.Request) {
	h.wg.Add(1)
	defer h.wg.Done()
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		h.passThrough(w, r)
		return
	}
	body, ok := readRequest(w, r)
	if !ok {
		return
	}
	h.rec.SeeHeaders(r.Header)
	args := json.RawMessage(body)
	if len(bytes.TrimSpace(body)) > 0 && !json.Valid(body) {
		args, _ = json.Marshal(string(body))
	}
	// The server's spans join the agent's trace, or one the proxy starts for the call.
	if r.Header.Get(endpoint.TraceParentHeader) == "" {
		r.Header.Set(endpoint.TraceParentHeader, endpoint.NewTraceParent())
	}
	p := h.rec.Begin(path.Base(r.URL.Path), args, r.Header.Get(h.rec.opts.Key.Header))
	h.rec.SetTraceID(p, endpoint.TraceIDOf(r.Header.Get(endpoint.TraceParentHeader)))
	if p.Fault.Kind == fault.Error {
		msg := fmt.Sprintf("idemtest injected fault: %s (the call was not forwarded)", p.Fault)
		oc, _ := endpoint.ClassifyStatus(p.Fault.Status)
		h.rec.Finish(p, Answer{Outcome: oc, Status: p.Fault.Status, Error: msg})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(p.Fault.Status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": msg})
		return
	}
	if !h.wait(r, p.Fault.Delay) {
		h.rec.Finish(p, Answer{Outcome: outcome.Fail, Error: "the agent gave up during the injected delay; not forwarded"})
		return
	}
	// With a lost answer the server finishes whatever the agent does meanwhile.
	ctx, cancel := h.upstreamCtx(r, p.Fault.Kind == fault.LoseResponse || p.Fault.Kind == fault.Timeout)
	defer cancel()
	resp, err := h.forward(ctx, r, body)
	if err != nil {
		h.rec.Finish(p, Answer{Outcome: outcome.Info, Error: "upstream: " + err.Error()})
		if p.Fault.Kind == fault.LoseResponse || p.Fault.Kind == fault.Timeout {
			reset(w)
			return
		}
		http.Error(w, "idemtest proxy: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	h.rec.SeeHeaders(resp.Header)
	// A body over the cap is not kept: the agent gets it streamed, the trace a marker.
	rbody, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	over := len(rbody) > maxBody
	oc, msg := endpoint.ClassifyStatus(resp.StatusCode)
	if rerr != nil {
		oc, msg = outcome.Info, "upstream body: "+rerr.Error()
	}
	a := Answer{Outcome: oc, Status: resp.StatusCode, Error: msg, Replayed: endpoint.IsReplayed(resp.Header)}
	switch {
	case over:
		a.Truncated = true
		a.Error = strings.TrimPrefix(a.Error+"; ", "; ") + fmt.Sprintf("answer over the proxy's %s body cap: passed on, not recorded", sizeText(maxBody))
	case json.Valid(rbody):
		a.Result = rbody
	case len(rbody) > 0:
		a.Result, _ = json.Marshal(string(rbody))
	}
	refused(&a)
	h.rec.Finish(p, a)
	switch p.Fault.Kind {
	case fault.LoseResponse:
		reset(w)
		return
	case fault.Timeout:
		h.hold(r)
		reset(w)
		return
	}
	copyHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(rbody)
	if over {
		_, _ = io.Copy(w, resp.Body)
	}
}

// passThrough forwards a request that is not a tool call, streaming the answer.
func (h *httpProxy) passThrough(w http.ResponseWriter, r *http.Request) {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL, _ = url.Parse(h.target(pr.In))
			pr.Out.Host = ""
		},
		Transport:     h.client.Transport,
		FlushInterval: -1,
	}
	rp.ServeHTTP(w, r)
}

// serveMCP proxies MCP streamable HTTP: POSTed JSON-RPC messages are inspected as on stdio,
// their answers (a JSON body or an SSE stream) read message by message; GET streams and
// DELETE pass through.
func (h *httpProxy) serveMCP(w http.ResponseWriter, r *http.Request) {
	h.wg.Add(1)
	defer h.wg.Done()
	if r.Method != http.MethodPost {
		h.passThrough(w, r)
		return
	}
	body, ok := readRequest(w, r)
	if !ok {
		return
	}
	h.rec.SeeHeaders(r.Header)
	act := h.mcp.fromAgent(body)
	if act.forward != nil {
		body = act.forward
	}
	if act.then != nil {
		// The proxy's own tools/list goes first, on the agent's session, so that the call's
		// tool is known when its answer comes.
		h.own(r, act.then)
	}
	if act.reply != nil {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(act.reply)
		return
	}
	if act.held != "" {
		// A timeout fault: the call reaches the server only once the agent gave up on it.
		h.withhold(w, r, act.watch, false)
		if b := h.mcp.release(act.held); b != nil {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), lateTimeout)
			defer cancel()
			h.ownCtx(ctx, r, b)
		}
		return
	}
	if act.skip {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if !h.wait(r, act.delay) {
		return
	}
	// Detached: the answer is read (and recorded) even when the agent gave up on it.
	ctx, cancel := h.upstreamCtx(r, true)
	defer cancel()
	resp, err := h.forward(ctx, r, body)
	if err != nil {
		h.upstreamFailed(err.Error())
		http.Error(w, "idemtest proxy: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		h.upstreamFailed("HTTP " + resp.Status)
	}
	h.rec.SeeHeaders(resp.Header)
	ct := resp.Header.Get("Content-Type")
	copyHeaders(w.Header(), resp.Header)
	switch {
	case strings.HasPrefix(ct, "application/json"):
		rbody, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
		if len(rbody) > maxBody {
			// Over the cap: read through for the id, never held, and answer in its place.
			var scan mcp.IDScanner
			scan.Feed(rbody)
			n, _ := io.Copy(scanWriter{&scan}, resp.Body)
			d := dropped{size: int64(len(rbody)) + n}
			d.id, d.request = scan.ID()
			reply, note := h.mcp.serverDropped(d, maxBody)
			h.rec.Note(note)
			if reply == nil {
				h.withhold(w, r, act.watch, false)
				return
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(resp.StatusCode)
			_, _ = w.Write(reply)
			return
		}
		if deliver, then := h.mcp.fromServer(rbody); !deliver {
			h.withhold(w, r, act.watch, false)
			return
		} else if then != nil {
			h.own(r, then)
		}
		w.WriteHeader(resp.StatusCode)
		if _, err := w.Write(rbody); err != nil {
			h.mcp.undeliverable(rbody, err)
		} else if err := http.NewResponseController(w).Flush(); err != nil {
			h.mcp.undeliverable(rbody, err)
		}
	case strings.HasPrefix(ct, "text/event-stream"):
		w.Header().Del("Content-Length")
		w.WriteHeader(resp.StatusCode)
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		held := false
		h.readEvents(resp.Body, func(event []byte, data []byte) {
			if event == nil {
				// An event over the cap: data is the error answer in its place, if any.
				if data != nil {
					_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", bytes.TrimSpace(data))
					_ = rc.Flush()
				}
				return
			}
			deliver, then := h.mcp.fromServer(data)
			if then != nil {
				h.own(r, then)
			}
			if !deliver {
				held = true
				return
			}
			_, err := w.Write(event)
			if err == nil {
				err = rc.Flush()
			}
			if err != nil {
				h.mcp.undeliverable(data, err)
			}
		})
		if held {
			// A stream that ended without the answer would make the client resume it; keep
			// it open until the agent gives up.
			h.withhold(w, r, act.watch, true)
		}
	default:
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}
}

// lateTimeout bounds the wait for the answer to a call a timeout fault released late.
const lateTimeout = 30 * time.Second

// withhold keeps an MCP request open without its answer until the agent gives up or the proxy
// stops, or, for a watched call, until Options.Hold passes: the agent then gets a "request
// timed out" error, as a JSON body or, when the answer was a stream, an event on it.
func (h *httpProxy) withhold(w http.ResponseWriter, r *http.Request, watch string, sse bool) {
	var expired <-chan time.Time
	if watch != "" {
		t := time.NewTimer(h.rec.opts.Hold)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-r.Context().Done():
		return
	case <-h.base.Done():
		return
	case <-expired:
	}
	reply, _ := h.mcp.expire(watch)
	if reply == nil {
		return
	}
	if sse {
		_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", bytes.TrimSpace(reply))
		_ = http.NewResponseController(w).Flush()
		return
	}
	w.Header().Del("Content-Length")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(reply)
}

// own sends a request of the proxy's own on the agent's session and feeds the answers to the
// session, never to the agent.
func (h *httpProxy) own(r *http.Request, msg []byte) {
	ctx, cancel := h.upstreamCtx(r, true)
	defer cancel()
	h.ownCtx(ctx, r, msg)
}

// ownCtx is own with the context of the upstream requests.
func (h *httpProxy) ownCtx(ctx context.Context, r *http.Request, msg []byte) {
	for msg != nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.target(r), bytes.NewReader(msg))
		if err != nil {
			return
		}
		copyHeaders(req.Header, r.Header)
		req.Header.Del("Content-Length")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := h.client.Do(req)
		if err != nil {
			return
		}
		msg = nil
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			h.readEvents(resp.Body, func(_, data []byte) {
				if _, then := h.mcp.fromServer(data); then != nil {
					msg = then
				}
			})
		} else {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
			_, msg = h.mcp.fromServer(b)
		}
		resp.Body.Close()
	}
}

// scanWriter feeds what is written to an IDScanner.
type scanWriter struct{ s *mcp.IDScanner }

func (w scanWriter) Write(p []byte) (int, error) {
	w.s.Feed(p)
	return len(p), nil
}

// readEvents calls fn with each server-sent event (its raw lines, the blank line included) and
// its data. An event over maxBody is not held: its data is read through for a JSON-RPC id, and
// fn gets a nil event and, for an answer with an id, the session's error answer in its place.
func (h *httpProxy) readEvents(r io.Reader, fn func(event, data []byte)) {
	lr := newLineReader(r, maxBody)
	var event, data bytes.Buffer
	var scan *mcp.IDScanner
	var size int64
	for {
		line, d, err := lr.next()
		if err != nil {
			return
		}
		size += int64(len(line))
		if d != nil {
			size += d.size
		}
		if scan == nil && (d != nil || size > maxBody) {
			scan = &mcp.IDScanner{}
			scan.Feed(data.Bytes())
			event.Reset()
			data.Reset()
		}
		t := bytes.TrimRight(line, "\r\n")
		switch {
		case d != nil:
			// A data line over the cap: its id, if any, was scanned as it was read.
			if d.id != nil {
				scan = &mcp.IDScanner{}
				scan.Feed(fmt.Appendf(nil, `{"id":%s}`, d.id))
			}
		case len(t) == 0:
			if scan != nil {
				dd := dropped{size: size}
				dd.id, dd.request = scan.ID()
				reply, note := h.mcp.serverDropped(dd, maxBody)
				h.rec.Note(note)
				fn(nil, reply)
			} else if event.Len() > 0 {
				// The blank line is what dispatches the event: a client's SSE parser (the
				// TypeScript SDK's) drops an event the stream ends without it.
				event.Write(line)
				fn(bytes.Clone(event.Bytes()), bytes.Clone(data.Bytes()))
			}
			event.Reset()
			data.Reset()
			scan, size = nil, 0
		case scan != nil:
			if v, ok := bytes.CutPrefix(t, []byte("data:")); ok {
				scan.Feed(bytes.TrimPrefix(v, []byte(" ")))
			}
		default:
			event.Write(line)
			if v, ok := bytes.CutPrefix(t, []byte("data:")); ok {
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.Write(bytes.TrimPrefix(v, []byte(" ")))
			}
		}
	}
}
