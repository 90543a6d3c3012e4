package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// ListenOptions configure Listen.
type ListenOptions struct {
	// Addr is the loopback address to listen on (host:port; port 0 picks one).
	Addr string
	// Duration ends the listening after this long; 0: until ctx is done.
	Duration time.Duration
	// Idle ends the listening once this long passed without an export, after the first one;
	// 0: off.
	Idle time.Duration
	// MaxBody bounds one export request, compressed and decompressed; 0 is MaxLine.
	MaxBody int64
	// Ready is called with the address once the receiver listens.
	Ready func(addr string)
	// Log receives a line per refused export request (nil: discarded).
	Log io.Writer
}

// CheckLoopback refuses an address that is not on the loopback interface: the receiver takes
// traces from any process that can reach it, so it is only for a local session or a test.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: want HOST:PORT on loopback, such as 127.0.0.1:4318", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--listen %q: the receiver listens on loopback only (127.0.0.1, ::1 or localhost), as anyone who reaches it can feed it traces", addr)
}

// Listen receives OTLP/HTTP trace exports (POST /v1/traces, application/x-protobuf or
// application/json, gzip accepted) on a loopback address and hands each tool call to add, until
// ctx is done, Duration has passed or the exporter has been idle for Idle. Requests in flight
// when it stops are finished. add is never called concurrently.
func Listen(ctx context.Context, o ListenOptions, m Mapping, add func(Call) error) error {
	if err := CheckLoopback(o.Addr); err != nil {
		return &InputError{Path: "--listen", Msg: err.Error()}
	}
	if o.MaxBody <= 0 {
		o.MaxBody = MaxLine
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return &InputError{Path: "--listen", Msg: err.Error()}
	}
	url := "http://" + ln.Addr().String() + "/v1/traces"
	m = m.withDefaults()
	r := &receiver{opts: o, m: m, ex: newExecIndex(m), add: add, url: url, activity: make(chan struct{}, 1),
		bodies: make(chan struct{}, maxConcurrentBodies)}
	mux := http.NewServeMux()
	mux.Handle("/v1/traces", r)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	var deadline <-chan time.Time
	if o.Duration > 0 {
		t := time.NewTimer(o.Duration)
		defer t.Stop()
		deadline = t.C
	}
	var idle *time.Timer
	var idleC <-chan time.Time
	var serveErr error
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-deadline:
			break wait
		case <-idleC:
			break wait
		case <-r.activity:
			if o.Idle > 0 {
				if idle == nil {
					idle = time.NewTimer(o.Idle)
					defer idle.Stop()
					idleC = idle.C
				} else {
					idle.Reset(o.Idle)
				}
			}
		case serveErr = <-served:
			break wait
		}
	}
	// Finish the exports in flight: their spans belong to the audit.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// maxConcurrentBodies is how many export requests are read and decoded at once.
const maxConcurrentBodies = 4

// receiver is the OTLP/HTTP trace endpoint.
type receiver struct {
	opts     ListenOptions
	m        Mapping
	ex       *execIndex
	add      func(Call) error
	url      string
	activity chan struct{}
	// bodies bounds the export bodies held at once: memory is at most maxConcurrentBodies times
	// MaxBody (twice, decompressing), however many exporters send.
	bodies chan struct{}

	mu  sync.Mutex
	n   int
	err error // the first error add returned
}

func (r *receiver) refuse(w http.ResponseWriter, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(r.opts.Log, "audit: refused an export: %s\n", msg)
	http.Error(w, msg, status)
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		r.refuse(w, http.StatusMethodNotAllowed, "%s %s: only POST", req.Method, req.URL.Path)
		return
	}
	ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	isJSON := ct == "application/json"
	if !isJSON && ct != "application/x-protobuf" && ct != "application/protobuf" {
		r.refuse(w, http.StatusUnsupportedMediaType, "Content-Type %q: want application/x-protobuf or application/json", ct)
		return
	}
	select {
	case r.bodies <- struct{}{}:
		defer func() { <-r.bodies }()
	case <-req.Context().Done():
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, r.opts.MaxBody))
	if err != nil {
		r.refuse(w, http.StatusRequestEntityTooLarge, "body over %d bytes: export smaller batches", r.opts.MaxBody)
		return
	}
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			r.refuse(w, http.StatusBadRequest, "gzip: %v", err)
			return
		}
		body, err = io.ReadAll(io.LimitReader(zr, r.opts.MaxBody+1))
		if err != nil {
			r.refuse(w, http.StatusBadRequest, "gzip: %v", err)
			return
		}
		if int64(len(body)) > r.opts.MaxBody {
			r.refuse(w, http.StatusRequestEntityTooLarge, "body over %d bytes once decompressed: export smaller batches", r.opts.MaxBody)
			return
		}
	default:
		r.refuse(w, http.StatusUnsupportedMediaType, "Content-Encoding %q: want gzip or none", enc)
		return
	}
	var exp *coltracepb.ExportTraceServiceRequest
	if isJSON {
		exp, err = unmarshalOTLP(body)
	} else {
		exp = &coltracepb.ExportTraceServiceRequest{}
		err = proto.Unmarshal(body, exp)
	}
	if err != nil {
		r.refuse(w, http.StatusBadRequest, "not an OTLP ExportTraceServiceRequest: %v", err)
		return
	}
	r.mu.Lock()
	r.n++
	where := r.url + "#" + strconv.Itoa(r.n)
	err = addRequest(exp, where, r.m, r.ex, r.add)
	if err != nil && r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	if err != nil {
		r.refuse(w, http.StatusInternalServerError, "%v", err)
		return
	}
	select {
	case r.activity <- struct{}{}:
	default:
	}
	var out []byte
	if isJSON {
		out, _ = protojson.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/json")
	} else {
		out, _ = proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
	}
	_, _ = w.Write(out)
}
