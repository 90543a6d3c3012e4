package sink

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Route is one endpoint of a sink.
type Route struct {
	Name   string
	Method string // "" matches any method
	// Path may contain {param} segments.
	Path    string
	Status  int
	Body    any // answered as JSON; rendered with Render first
	Headers map[string]string
	Delay   time.Duration
	// FailFirst answers 500 to the first N requests of each trial.
	FailFirst int
	// HangFirst holds the first N requests until the caller gives up.
	HangFirst int
	// DropResponseFirst records the first N requests, then resets the connection unanswered.
	DropResponseFirst int
}

// Config describes a sink.
type Config struct {
	Name   string
	Routes []Route
	// Port to listen on; 0 picks a free one.
	Port int
	// KeyHeaders are request headers recorded as the entry's key (first present wins); default
	// Idempotency-Key.
	KeyHeaders []string
	// Render, when set, renders a route's response body for a request: vars has seq (the
	// route's 1-based request number in the trial), body, params, headers, method and path.
	Render func(body any, vars map[string]any) (any, error)
}

// Sink is a running recording server.
type Sink struct {
	cfg  Config
	ln   net.Listener
	srv  *http.Server
	stop chan struct{}

	mu       sync.Mutex
	requests []map[string]any
	byRoute  map[string][]map[string]any
	seen     map[string]int // requests per route this trial
}

// Start listens on loopback and serves the sink.
func Start(cfg Config) (*Sink, error) {
	if len(cfg.KeyHeaders) == 0 {
		cfg.KeyHeaders = []string{"Idempotency-Key"}
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", cfg.Port))
	if err != nil {
		return nil, fmt.Errorf("sink %s: listen on port %d: %w", cfg.Name, cfg.Port, err)
	}
	s := &Sink{cfg: cfg, ln: ln, stop: make(chan struct{})}
	s.Reset()
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the sink's base URL.
func (s *Sink) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the sink and releases hanging requests.
func (s *Sink) Close() error {
	close(s.stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		return s.srv.Close()
	}
	return nil
}

// Reset forgets the recordings and the fault counters: each trial starts clean.
func (s *Sink) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = []map[string]any{}
	s.byRoute = map[string][]map[string]any{}
	for _, r := range s.cfg.Routes {
		s.byRoute[r.Name] = []map[string]any{}
	}
	s.seen = map[string]int{}
}

// Snapshot returns the recordings for assertions: each route's name maps to its requests, and
// "requests" to all of them, unmatched ones included. Entries are copies.
func (s *Sink) Snapshot() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]any{"url": s.URL()}
	list := func(in []map[string]any) []any {
		l := make([]any, len(in))
		for i, e := range in {
			l[i] = copyMap(e)
		}
		return l
	}
	for name, reqs := range s.byRoute {
		out[name] = list(reqs)
	}
	out["requests"] = list(s.requests)
	return out
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// match finds the route for a request and its path parameters.
func (s *Sink) match(r *http.Request) (*Route, map[string]any) {
	for i := range s.cfg.Routes {
		rt := &s.cfg.Routes[i]
		if rt.Method != "" && !strings.EqualFold(rt.Method, r.Method) {
			continue
		}
		if params, ok := matchPath(rt.Path, r.URL.Path); ok {
			return rt, params
		}
	}
	return nil, nil
}

func matchPath(pattern, path string) (map[string]any, bool) {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	xs := strings.Split(strings.Trim(path, "/"), "/")
	if len(ps) != len(xs) {
		return nil, false
	}
	params := map[string]any{}
	for i, p := range ps {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			params[p[1:len(p)-1]] = xs[i]
			continue
		}
		if p != xs[i] {
			return nil, false
		}
	}
	return params, true
}

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 10<<20))
	var body any
	if len(raw) > 0 && json.Unmarshal(raw, &body) != nil {
		body = string(raw)
	}
	headers := map[string]any{}
	for k, v := range r.Header {
		headers[k] = strings.Join(v, ", ")
	}
	key := ""
	for _, h := range s.cfg.KeyHeaders {
		if v := r.Header.Get(h); v != "" {
			key = v
			break
		}
	}
	rt, params := s.match(r)
	entry := map[string]any{}
	if m, ok := body.(map[string]any); ok {
		for k, v := range m {
			entry[k] = v // the body's fields are the entry's fields
		}
	}
	for k, v := range map[string]any{"body": body, "headers": headers, "method": r.Method, "path": r.URL.Path,
		"key": key, "at": time.Now().UTC().Format(time.RFC3339Nano), "params": params} {
		entry[k] = v
	}

	s.mu.Lock()
	s.requests = append(s.requests, entry)
	n := 0
	if rt != nil {
		entry["route"] = rt.Name
		s.byRoute[rt.Name] = append(s.byRoute[rt.Name], entry)
		s.seen[rt.Name]++
		n = s.seen[rt.Name]
	}
	s.mu.Unlock()

	if rt == nil {
		http.Error(w, fmt.Sprintf("sink %s: no route for %s %s", s.cfg.Name, r.Method, r.URL.Path), http.StatusNotFound)
		return
	}
	if rt.Delay > 0 {
		select {
		case <-time.After(rt.Delay):
		case <-r.Context().Done():
			return
		case <-s.stop:
			return
		}
	}
	switch {
	case n <= rt.HangFirst:
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
		return
	case n <= rt.DropResponseFirst:
		// The downstream committed; its answer never arrives.
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // a reset, not a polite close
				}
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case n <= rt.FailFirst:
		http.Error(w, `{"error":"injected failure"}`, http.StatusInternalServerError)
		return
	}
	respBody := rt.Body
	if s.cfg.Render != nil && respBody != nil {
		vars := map[string]any{"seq": n, "body": body, "params": params, "headers": headers, "method": r.Method, "path": r.URL.Path}
		out, err := s.cfg.Render(respBody, vars)
		if err != nil {
			http.Error(w, fmt.Sprintf("sink %s: render response: %v", s.cfg.Name, err), http.StatusInternalServerError)
			return
		}
		respBody = out
	}
	for k, v := range rt.Headers {
		w.Header().Set(k, v)
	}
	status := rt.Status
	if status == 0 {
		status = http.StatusOK
	}
	if respBody == nil {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(respBody)
}
