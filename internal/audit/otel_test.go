package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/idemtest/idemtest/cmd"
	"github.com/idemtest/idemtest/internal/audit"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/reportschema/schemacheck"
)

// fileExporter is a loopback OTLP/HTTP receiver that writes each export request as one line of
// OTLP JSON, as the Collector's file exporter does.
type fileExporter struct {
	mu   sync.Mutex
	out  *os.File
	reqs int
}

func (fe *fileExporter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	line, err := protojson.Marshal(req)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	fe.mu.Lock()
	fe.out.Write(append(line, '\n'))
	fe.reqs++
	fe.mu.Unlock()
	resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(resp)
}

// ledger is an HTTP charge server instrumented with the OpenTelemetry SDK: POST /charges with
// an Idempotency-Key header. Duplicates of a key meet at a barrier (each key is sent `copies`
// times at once), so that the naive server (look up, then execute, then store: not atomic)
// executes every copy, and the locked one (the key held across look-up, execute and store)
// executes once and replays the rest. It counts executions and replays itself: the truth the
// audit is compared with.
type ledger struct {
	tracer trace.Tracer
	locked bool
	copies map[string]int

	mu       sync.Mutex
	cond     *sync.Cond
	arrived  map[string]int
	results  map[string]string
	execs    map[string]int
	replays  int
	keyLocks map[string]*sync.Mutex
}

func newLedger(tp trace.TracerProvider, locked bool, copies map[string]int) *ledger {
	l := &ledger{tracer: tp.Tracer("ledger"), locked: locked, copies: copies, arrived: map[string]int{},
		results: map[string]string{}, execs: map[string]int{}, keyLocks: map[string]*sync.Mutex{}}
	l.cond = sync.NewCond(&l.mu)
	return l
}

func (l *ledger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	route := "/charges"
	if r.Method == http.MethodGet {
		route = "/balance"
	}
	ctx, span := l.tracer.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	_ = ctx
	key := r.Header.Get("Idempotency-Key")
	span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route),
		attribute.String("url.path", r.URL.Path))
	if key != "" {
		span.SetAttributes(attribute.StringSlice("http.request.header.idempotency-key", []string{key}))
	}
	status, replayed, body := l.handle(r.Method, key)
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
		span.SetAttributes(attribute.StringSlice("http.response.header.idempotent-replayed", []string{"true"}))
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, "")
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (l *ledger) handle(method, key string) (status int, replayed bool, body string) {
	if method == http.MethodGet {
		return 200, false, `{"balance":1}`
	}
	if key == "" {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.execs[""]++
		return 201, false, `{"id":"nokey"}`
	}
	// The barrier: every copy of the key has arrived before any looks it up.
	l.mu.Lock()
	l.arrived[key]++
	l.cond.Broadcast()
	for l.arrived[key] < l.copies[key] {
		l.cond.Wait()
	}
	kl := l.keyLocks[key]
	if kl == nil {
		kl = &sync.Mutex{}
		l.keyLocks[key] = kl
	}
	l.mu.Unlock()
	if l.locked {
		kl.Lock()
		defer kl.Unlock()
	}
	l.mu.Lock()
	prev, seen := l.results[key]
	l.mu.Unlock()
	if seen {
		l.mu.Lock()
		l.replays++
		l.mu.Unlock()
		return 200, true, prev
	}
	l.mu.Lock()
	l.execs[key]++
	id := fmt.Sprintf(`{"id":"ch_%s_%d"}`, key, l.execs[key])
	if !l.locked {
		// The naive server stores after every copy looked up: all of them execute.
		l.arrived[key+"#done"]++
		l.cond.Broadcast()
		for l.arrived[key+"#done"] < l.copies[key] {
			l.cond.Wait()
		}
	}
	l.results[key] = id
	l.mu.Unlock()
	return 201, false, id
}

// doubles is the truth: how many keys the server executed more than once.
func (l *ledger) doubles() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for k, e := range l.execs {
		if k != "" && e > 1 {
			n++
		}
	}
	return n
}

// record runs the workload against a ledger and returns the OTLP JSON file its spans were
// exported to, through the SDK's OTLP/HTTP exporter and a loopback receiver.
func record(t *testing.T, locked bool) (string, *ledger) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fe := &fileExporter{out: f}
	recv := httptest.NewServer(fe)
	defer recv.Close()
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(recv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithMaxExportBatchSize(7)))
	// Keys k0..k5 are sent twice at once, k6..k7 once and then retried after the answer, k8 once.
	copies := map[string]int{}
	for i := 0; i < 6; i++ {
		copies[fmt.Sprintf("k%d", i)] = 2
	}
	for _, k := range []string{"k6", "k7", "k8"} {
		copies[k] = 1
	}
	l := newLedger(tp, locked, copies)
	srv := httptest.NewServer(l)
	defer srv.Close()
	post := func(key string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(`{"amount":10}`))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		for c := 0; c < 2; c++ {
			wg.Add(1)
			go func() { defer wg.Done(); post(fmt.Sprintf("k%d", i)) }()
		}
	}
	wg.Wait()
	for _, k := range []string{"k6", "k7"} {
		post(k)
		l.mu.Lock()
		l.copies[k] = 0 // the retry needs no partner at the barrier
		l.mu.Unlock()
		post(k)
	}
	post("k8")
	resp, err := srv.Client().Get(srv.URL + "/balance")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("export spans: %v", err)
	}
	if fe.reqs < 2 {
		t.Fatalf("the receiver got %d export requests, want several (batches of 7 spans)", fe.reqs)
	}
	return path, l
}

// audit runs idemtest audit on argv and returns its exit code, stdout and the JSON report.
func auditCLI(t *testing.T, args ...string) (cmd.ExitCode, string, map[string]any) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	io, out, errOut := iostreams.Test()
	code := cmd.Execute(context.Background(), &cmd.Factory{IO: io, Version: "test"}, append([]string{"audit", "--json", jsonPath}, args...))
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return code, out.String(), nil
	}
	if err := schemacheck.Validate("audit", b); err != nil {
		t.Fatalf("audit --json does not validate: %v", err)
	}
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return code, out.String(), rep
}

func countKind(rep map[string]any, kind string) int {
	n := 0
	for _, f := range rep["findings"].([]any) {
		if f.(map[string]any)["kind"] == kind {
			n++
		}
	}
	return n
}

// TestAuditOTelSDK: spans produced by the OpenTelemetry Go SDK, exported over OTLP/HTTP and
// written as the Collector's file exporter writes them, are audited against the server's own
// count of executions.
func TestAuditOTelSDK(t *testing.T) {
	t.Run("naive", func(t *testing.T) {
		path, l := record(t, false)
		truth := l.doubles()
		if truth != 6 {
			t.Fatalf("the naive ledger executed %d keys twice, want 6 (the barrier makes every copy execute)", truth)
		}
		code, _, rep := auditCLI(t, path, "--max-hit-rate", "off")
		if code != cmd.ExitFailed {
			t.Errorf("exit %d, want 1", code)
		}
		if got := countKind(rep, "double-execution"); got != truth {
			t.Errorf("audit found %d double executions, the server executed %d keys twice", got, truth)
		}
		for _, f := range rep["findings"].([]any) {
			fm := f.(map[string]any)
			if fm["kind"] != "double-execution" {
				t.Errorf("unexpected finding %v", fm)
				continue
			}
			for _, c := range fm["calls"].([]any) {
				cm := c.(map[string]any)
				if cm["trace_id"] == "" || cm["span_id"] == "" {
					t.Errorf("finding call without ids: %v", cm)
				}
			}
		}
	})
	t.Run("locked", func(t *testing.T) {
		path, l := record(t, true)
		if l.doubles() != 0 {
			t.Fatalf("the locked ledger executed a key twice")
		}
		code, _, rep := auditCLI(t, path, "--max-hit-rate", "off")
		if code != cmd.ExitOK {
			t.Errorf("exit %d, want 0", code)
		}
		if n := len(rep["findings"].([]any)); n != 0 {
			t.Errorf("%d findings, want none: %v", n, rep["findings"])
		}
		keyed := rep["keyed"].(float64)
		if rep["replays"].(float64) != float64(l.replays) || l.replays != 8 {
			t.Errorf("audit counted %v replays, the server replayed %d (want 8)", rep["replays"], l.replays)
		}
		if want := float64(l.replays) / keyed; rep["hit_rate"].(float64) != want {
			t.Errorf("hit rate %v, want %v", rep["hit_rate"], want)
		}
		// The same export fails a 5% threshold: 8 replays of 17 keyed calls.
		if code, _, rep := auditCLI(t, path, "--max-hit-rate", "5%"); code != cmd.ExitFailed || countKind(rep, "hit-rate") != 1 {
			t.Errorf("--max-hit-rate 5%%: exit %d, %d hit-rate findings; want 1 and 1", code, countKind(rep, "hit-rate"))
		}
	})
	t.Run("bad line", func(t *testing.T) {
		path, _ := record(t, true)
		b, _ := os.ReadFile(path)
		lines := bytes.SplitAfter(b, []byte("\n"))
		bad := append(append(append([]byte{}, lines[0]...), []byte("{\"resourceSpans\": 3}\n")...), bytes.Join(lines[1:], nil)...)
		os.WriteFile(path, bad, 0o644)
		code, _, rep := auditCLI(t, path)
		if code != cmd.ExitUsage || rep != nil {
			t.Errorf("exit %d, report %v; want 2 and no report", code, rep != nil)
		}
	})
}

// TestExecutionSpan: with --execution-span, a call executed once per matching child span that
// did not fail, whatever its answer: a charge that executed and then answered 502, retried under
// its key and executed again, is a double execution the answers alone cannot show. Each span is
// exported in a request of its own, the child before its parent, as the SDK's batches order them.
func TestExecutionSpan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fe := &fileExporter{out: f}
	recv := httptest.NewServer(fe)
	defer recv.Close()
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(recv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithMaxExportBatchSize(1)))
	tr := tp.Tracer("test")
	call := func(key string, status int, replayed bool, exec string) {
		cctx, sp := tr.Start(ctx, "POST /charges", trace.WithSpanKind(trace.SpanKindServer))
		sp.SetAttributes(attribute.String("http.request.method", "POST"), attribute.String("http.route", "/charges"),
			attribute.StringSlice("http.request.header.idempotency-key", []string{key}), attribute.Int("http.response.status_code", status))
		if replayed {
			sp.SetAttributes(attribute.StringSlice("http.response.header.idempotent-replayed", []string{"true"}))
		}
		if exec != "" {
			_, child := tr.Start(cctx, "charge.execute")
			if exec == "failed" {
				child.SetStatus(codes.Error, "insert failed")
			}
			child.End()
		}
		sp.End()
	}
	call("k1", 502, false, "ok")     // charged, then the answer failed
	call("k1", 200, false, "ok")     // the retry charged again
	call("k2", 200, false, "ok")     // charged once
	call("k2", 200, true, "")        // and replayed
	call("k3", 500, false, "failed") // the charge itself failed: nothing executed
	call("k3", 200, false, "ok")     // the retry charged
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	f.Close()

	judge := func(m audit.Mapping) *audit.Report {
		a := audit.New(audit.Options{MaxHitRate: -1, MaxConflictRate: -1})
		if err := audit.ReadFile(ctx, path, m, a.Add); err != nil {
			t.Fatal(err)
		}
		return a.Report()
	}
	// The answers alone: k1's first answer failed, so one execution each.
	if rep := judge(audit.Mapping{}); rep.Executions != 3 || rep.Violations != 0 {
		t.Errorf("default rule: %d executions, %d violations; want 3 and 0", rep.Executions, rep.Violations)
	}
	rep := judge(audit.Mapping{ExecutionSpan: "*.execute"})
	if rep.Executions != 4 || rep.Replays != 1 || rep.Violations != 1 {
		t.Fatalf("execution spans: %d executions, %d replays, %d violations; want 4, 1, 1: %+v", rep.Executions, rep.Replays, rep.Violations, rep.Findings)
	}
	if f := rep.Findings[0]; f.Kind != audit.DoubleExecution || f.Key != "k1" || f.Count != 2 {
		t.Errorf("finding %+v: want k1 executed twice", f)
	}
	if err := audit.CheckExecutionSpan("[x"); err == nil {
		t.Error("a malformed --execution-span glob was accepted")
	}
}
