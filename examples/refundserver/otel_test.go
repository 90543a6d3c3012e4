package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/idemtest/idemtest/cmd"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/reportschema/schemacheck"
)

// listenWriter is run's stderr: it hands over the address of the "listening on" line.
type listenWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	addr chan string
	sent bool
}

func (w *listenWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		if _, rest, ok := cutAny(w.buf.String(), "listening on http://", "traces at http://"); ok {
			if addr, _, ok := strings.Cut(rest, " "); ok {
				w.sent = true
				w.addr <- addr
			}
		}
	}
	return len(p), nil
}

func (w *listenWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// instrumented is the reference server started through run, as its command line does, exporting
// spans with --otel-file.
type instrumented struct {
	URL     string
	Spans   string // the --otel-file
	stop    context.CancelFunc
	done    chan int
	stderr  *listenWriter
	stopped bool
}

func startInstrumented(t *testing.T, args ...string) *instrumented {
	t.Helper()
	spans := filepath.Join(t.TempDir(), "spans.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	s := &instrumented{Spans: spans, stop: cancel, done: make(chan int, 1), stderr: &listenWriter{addr: make(chan string, 1)}}
	argv := append([]string{"--addr", "127.0.0.1:0", "--otel-file", spans, "--key-ttl", "1h"}, args...)
	go func() { s.done <- run(ctx, argv, strings.NewReader(""), io.Discard, s.stderr) }()
	t.Cleanup(func() { s.Stop(t) })
	select {
	case addr := <-s.stderr.addr:
		s.URL = "http://" + addr
	case code := <-s.done:
		s.stopped = true
		t.Fatalf("refundserver exited %d: %s", code, s.stderr.String())
	}
	return s
}

// Stop ends the server; every span of a finished call is in the file when it returns.
func (s *instrumented) Stop(t *testing.T) {
	t.Helper()
	if s.stopped {
		return
	}
	s.stopped = true
	s.stop()
	if code := <-s.done; code != 0 {
		t.Errorf("refundserver exited %d: %s", code, s.stderr.String())
	}
}

// post calls a tool over HTTP with headers (the key among them) and returns the status.
func (s *instrumented) post(t *testing.T, tool string, headers map[string]string, args any) int {
	t.Helper()
	b, _ := json.Marshal(args)
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/tools/"+tool, bytes.NewReader(b))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// burst sends n copies of issue_refund under key at once.
func (s *instrumented) burst(t *testing.T, n int, key string, args any) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s.post(t, "issue_refund", map[string]string{"Idempotency-Key": key}, args)
		}()
	}
	close(start)
	wg.Wait()
}

func (s *instrumented) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// ledger is the truth: the refunds the server executed, per key.
func (s *instrumented) ledger(t *testing.T) map[string]int {
	t.Helper()
	var l struct {
		Refunds []refund `json:"refunds"`
	}
	s.getJSON(t, "/refunds", &l)
	per := map[string]int{}
	for _, r := range l.Refunds {
		per[r.Key]++
	}
	return per
}

// exportedSpan is one span of the --otel-file, as the test reads it with the official OTLP types.
type exportedSpan struct {
	Name, TraceID, SpanID string
	Attrs                 map[string]string
}

// readSpans parses the --otel-file: one ExportTraceServiceRequest in OTLP JSON per line.
func readSpans(t *testing.T, path string) []exportedSpan {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []exportedSpan
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		// OTLP JSON spells ids in hex (the Go SDK in capitals); the raw line keeps them so.
		var raw struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct {
						TraceID string `json:"traceId"`
						SpanID  string `json:"spanId"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		req := &coltracepb.ExportTraceServiceRequest{}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(sc.Bytes(), req); err != nil {
			t.Fatalf("%s:%d: not an OTLP JSON ExportTraceServiceRequest: %v", path, n, err)
		}
		for i, rs := range req.GetResourceSpans() {
			for j, ss := range rs.GetScopeSpans() {
				for k, sp := range ss.GetSpans() {
					es := exportedSpan{Name: sp.GetName(), Attrs: map[string]string{},
						TraceID: strings.ToLower(raw.ResourceSpans[i].ScopeSpans[j].Spans[k].TraceID),
						SpanID:  strings.ToLower(raw.ResourceSpans[i].ScopeSpans[j].Spans[k].SpanID)}
					for _, kv := range sp.GetAttributes() {
						v := kv.GetValue()
						switch {
						case v.GetArrayValue() != nil && len(v.GetArrayValue().GetValues()) > 0:
							es.Attrs[kv.GetKey()] = v.GetArrayValue().GetValues()[0].GetStringValue()
						case v.GetIntValue() != 0:
							es.Attrs[kv.GetKey()] = fmt.Sprint(v.GetIntValue())
						default:
							es.Attrs[kv.GetKey()] = v.GetStringValue()
						}
					}
					out = append(out, es)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// auditFile runs idemtest audit on the file and returns its exit code and JSON report, checked
// against the audit schema.
func auditFile(t *testing.T, args ...string) (cmd.ExitCode, map[string]any) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	ios, out, errOut := iostreams.Test()
	code := cmd.Execute(context.Background(), &cmd.Factory{IO: ios, Version: "test"}, append([]string{"audit", "--json", jsonPath}, args...))
	t.Logf("idemtest audit %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatalf("no JSON report: %v", err)
	}
	if err := schemacheck.Validate("audit", b); err != nil {
		t.Fatalf("audit --json does not validate: %v", err)
	}
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return code, rep
}

// TestAuditOfInstrumentedServer is the audit's acceptance on real telemetry: the reference
// server, instrumented with the OpenTelemetry Go SDK, takes concurrent duplicate bursts; its
// exported spans are audited and compared with what the server itself counted (its ledger of
// refunds per key, and GET /stats).
func TestAuditOfInstrumentedServer(t *testing.T) {
	const keys, copies = 6, 6
	workload := func(t *testing.T, s *instrumented, acct string) {
		for i := range keys {
			s.burst(t, copies, fmt.Sprintf("%s-k%d", acct, i), map[string]any{"accountId": acct, "amount": 10})
		}
		// A retry of each key after its answer: a replay in every mode that keeps keys.
		for i := range keys {
			s.post(t, "issue_refund", map[string]string{"Idempotency-Key": fmt.Sprintf("%s-k%d", acct, i)}, map[string]any{"accountId": acct, "amount": 10})
		}
	}

	t.Run("naive", func(t *testing.T) { auditNaiveHTTP(t, keys, copies, workload) })

	t.Run("naive over MCP", func(t *testing.T) { auditNaiveMCP(t, keys, copies, workload) })

	t.Run("locked", func(t *testing.T) { auditLocked(t, keys, copies, workload) })
}

// auditNaiveHTTP is the "naive" case of TestAuditOfInstrumentedServer.
func auditNaiveHTTP(t *testing.T, keys, copies int, workload func(*testing.T, *instrumented, string)) {
	s := startInstrumented(t, "--idempotency", "naive", "--work", "20ms")
	// The truth is the ledger whatever the pace; bursts go on until one key executed
	// twice, so the audit has a double execution to find.
	var truth map[string]int
	for round := 0; ; round++ {
		workload(t, s, fmt.Sprintf("acct_n%d", round))
		truth = s.ledger(t)
		doubled := 0
		for _, n := range truth {
			if n > 1 {
				doubled++
			}
		}
		if doubled > 0 {
			break
		}
		if round == 20 {
			t.Fatal("the naive server never executed a key twice in 20 rounds of bursts")
		}
	}
	s.Stop(t)

	// The execution child spans agree with the ledger.
	execs := map[string]int{}
	for _, sp := range readSpans(t, s.Spans) {
		if sp.Name == spanRefundExecute {
			execs[sp.Attrs["idempotency.key"]]++
		}
	}
	for k, n := range truth {
		if execs[k] != n {
			t.Errorf("key %s: %d %s spans, the ledger has %d refunds", k, execs[k], spanRefundExecute, n)
		}
	}

	code, rep := auditFile(t, s.Spans, "--max-hit-rate", "off")
	if code != cmd.ExitFailed {
		t.Errorf("exit %d, want 1", code)
	}
	found := map[string]int{}
	for _, f := range rep["findings"].([]any) {
		fm := f.(map[string]any)
		if fm["kind"] != "double-execution" {
			t.Errorf("unexpected finding: %v", fm)
			continue
		}
		if fm["tool"] != "issue_refund" {
			t.Errorf("double execution of tool %v, want issue_refund", fm["tool"])
		}
		found[fm["key"].(string)] = int(fm["count"].(float64))
		for _, c := range fm["calls"].([]any) {
			cm := c.(map[string]any)
			if len(fmt.Sprint(cm["trace_id"])) != 32 || len(fmt.Sprint(cm["span_id"])) != 16 {
				t.Errorf("finding call without trace and span ids: %v", cm)
			}
		}
	}
	for k, n := range truth {
		if n > 1 && found[k] != n {
			t.Errorf("key %s executed %d times (ledger); audit says %d", k, n, found[k])
		}
	}
	for k, n := range found {
		if truth[k] < 2 {
			t.Errorf("audit says key %s executed %d times; the ledger has %d", k, n, truth[k])
		}
	}
	total := 0
	for _, n := range truth {
		total += n
	}
	if int(rep["executions"].(float64)) != total {
		t.Errorf("audit counted %v executions, the ledger has %d", rep["executions"], total)
	}
	// Counting the server's execution spans instead of its answers gives the same.
	if _, rep := auditFile(t, s.Spans, "--max-hit-rate", "off", "--execution-span", spanRefundExecute); int(rep["executions"].(float64)) != total ||
		len(rep["findings"].([]any)) != len(found) {
		t.Errorf("--execution-span: %v executions, %d findings; the ledger has %d executions, %d keys doubled", rep["executions"], len(rep["findings"].([]any)), total, len(found))
	}
}

// auditNaiveMCP is the "naive over MCP" case of TestAuditOfInstrumentedServer.
func auditNaiveMCP(t *testing.T, keys, copies int, workload func(*testing.T, *instrumented, string)) {
	s := startInstrumented(t, "--idempotency", "naive", "--work", "20ms")
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each call carries its own trace in params._meta.traceparent; the server's span must
	// continue it.
	var sentMu sync.Mutex
	sent := map[string]bool{}
	call := func(key string) {
		tid := randomID("")[:16] + randomID("")[:16]
		sentMu.Lock()
		sent[tid] = true
		sentMu.Unlock()
		meta := mcp.Meta{"traceparent": "00-" + tid + "-" + randomID("")[:16] + "-01"}
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "issue_refund", Meta: meta,
			Arguments: map[string]any{"accountId": "acct_m", "amount": 3, "idempotencyKey": key}})
		if err != nil {
			t.Error(err)
		}
	}
	var truth map[string]int
	for round := 0; ; round++ {
		key := fmt.Sprintf("m%d", round)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range copies {
			wg.Add(1)
			go func() { defer wg.Done(); <-start; call(key) }()
		}
		close(start)
		wg.Wait()
		if truth = s.ledger(t); truth[key] > 1 {
			break
		}
		if round == 20 {
			t.Fatal("the naive server never executed a key twice over MCP in 20 bursts")
		}
	}
	session := cs.ID()
	cs.Close()
	s.Stop(t)

	calls := 0
	for _, sp := range readSpans(t, s.Spans) {
		if sp.Attrs["mcp.method.name"] != "tools/call" {
			continue
		}
		calls++
		if !sent[sp.TraceID] {
			t.Errorf("tools/call span in trace %s, which no call sent in _meta.traceparent", sp.TraceID)
		}
		if sp.Attrs["mcp.session.id"] != session || sp.Attrs["gen_ai.tool.name"] != "issue_refund" {
			t.Errorf("tools/call span attributes %v, want session %s and tool issue_refund", sp.Attrs, session)
		}
	}
	if calls != len(sent) {
		t.Errorf("%d tools/call spans for %d calls", calls, len(sent))
	}
	code, rep := auditFile(t, s.Spans, "--max-hit-rate", "off")
	if code != cmd.ExitFailed {
		t.Errorf("exit %d, want 1", code)
	}
	found := map[string]int{}
	for _, f := range rep["findings"].([]any) {
		fm := f.(map[string]any)
		if fm["kind"] != "double-execution" {
			t.Errorf("unexpected finding: %v", fm)
			continue
		}
		found[fm["key"].(string)] = int(fm["count"].(float64))
		for _, c := range fm["calls"].([]any) {
			if c.(map[string]any)["session"] != session {
				t.Errorf("finding call without the MCP session: %v", c)
			}
		}
	}
	for k, n := range truth {
		if (n > 1 || found[k] > 0) && found[k] != n {
			t.Errorf("key %s executed %d times (ledger); audit says %d", k, n, found[k])
		}
	}
}

// auditLocked is the "locked" case of TestAuditOfInstrumentedServer.
func auditLocked(t *testing.T, keys, copies int, workload func(*testing.T, *instrumented, string)) {
	s := startInstrumented(t, "--idempotency", "locked", "--work", "20ms")
	workload(t, s, "acct_l")
	var st stats
	s.getJSON(t, "/stats", &st)
	truth := s.ledger(t)
	s.Stop(t)
	if len(truth) != keys || st.Executions != keys {
		t.Fatalf("the locked server executed %d keys, %d times; want %d and %d: %v", len(truth), st.Executions, keys, keys, truth)
	}
	if st.Keyed != keys*(copies+1) || st.Replays < keys {
		t.Fatalf("server stats %+v: want %d keyed calls and %d replays or more", st, keys*(copies+1), keys)
	}

	code, rep := auditFile(t, s.Spans, "--max-hit-rate", "off")
	if code != cmd.ExitOK {
		t.Errorf("exit %d, want 0", code)
	}
	if n := len(rep["findings"].([]any)); n != 0 {
		t.Errorf("%d findings, want none: %v", n, rep["findings"])
	}
	for name, want := range map[string]int{"keyed": st.Keyed, "executions": st.Executions, "replays": st.Replays, "conflicts": st.Conflicts} {
		if got := int(rep[name].(float64)); got != want {
			t.Errorf("audit %s = %d, the server counted %d", name, got, want)
		}
	}
	if got, want := rep["hit_rate"].(float64), float64(st.Replays)/float64(st.Keyed); got != want {
		t.Errorf("hit rate %v, the server's counts give %v", got, want)
	}
	if got, want := rep["conflict_rate"].(float64), float64(st.Conflicts)/float64(st.Keyed); got != want {
		t.Errorf("conflict rate %v, the server's counts give %v", got, want)
	}
	// The same export crosses a 1% hit-rate threshold: every key's retry was replayed.
	if code, rep := auditFile(t, s.Spans, "--max-hit-rate", "1%"); code != cmd.ExitFailed || len(rep["findings"].([]any)) != 1 {
		t.Errorf("--max-hit-rate 1%%: exit %d, findings %v; want 1 and one hit-rate finding", code, rep["findings"])
	}
}

// TestOTelFlags: an --otel-file that cannot be opened is a usage error before anything is served.
func TestOTelFlags(t *testing.T) {
	var stderr bytes.Buffer
	bad := filepath.Join(t.TempDir(), "missing", "spans.jsonl")
	if code := run(context.Background(), []string{"--addr", "127.0.0.1:0", "--otel-file", bad}, nil, io.Discard, &stderr); code != 2 {
		t.Errorf("exit %d, want 2 (%s)", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "--otel-file") || strings.Contains(stderr.String(), "listening") {
		t.Errorf("stderr %q: want the flag named and nothing served", stderr.String())
	}
}

// TestAuditListen: the reference server exports over OTLP/HTTP (--otel-endpoint) straight into
// idemtest audit --listen; the audit ends on Ctrl-C (here: its context) and reports the
// double executions the ledger shows.
func TestAuditListen(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	errOut := &listenWriter{addr: make(chan string, 1)}
	var out bytes.Buffer
	ios := &iostreams.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: errOut, Getenv: func(string) string { return "" }}
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	done := make(chan cmd.ExitCode, 1)
	go func() {
		done <- cmd.Execute(ctx, &cmd.Factory{IO: ios, Version: "test"},
			[]string{"audit", "--listen", "127.0.0.1:0", "--max-hit-rate", "off", "--json", jsonPath})
	}()
	var endpoint string
	select {
	case addr := <-errOut.addr:
		endpoint = "http://" + strings.TrimSuffix(addr, "/v1/traces") + "/v1/traces"
	case code := <-done:
		t.Fatalf("audit exited %d: %s", code, errOut.String())
	}

	s := startInstrumented(t, "--idempotency", "naive", "--work", "20ms", "--otel-endpoint", endpoint)
	var truth map[string]int
	sent := 0
	for round := 0; ; round++ {
		key := fmt.Sprintf("l%d", round)
		s.burst(t, 6, key, map[string]any{"accountId": "acct_listen", "amount": 7})
		sent += 6
		if truth = s.ledger(t); truth[key] > 1 {
			break
		}
		if round == 20 {
			t.Fatal("the naive server never executed a key twice in 20 bursts")
		}
	}
	s.Stop(t) // flushes every span to the receiver before it returns
	interrupt()
	code := <-done
	t.Logf("audit --listen: exit %d\n%s%s", code, &out, errOut)
	if code != cmd.ExitFailed {
		t.Errorf("exit %d, want 1", code)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemacheck.Validate("audit", b); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Calls    int `json:"calls"`
		Findings []struct {
			Kind  string `json:"kind"`
			Key   string `json:"key"`
			Count int    `json:"count"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Calls != sent {
		t.Errorf("audit --listen received %d calls, the test sent %d", rep.Calls, sent)
	}
	found := map[string]int{}
	for _, f := range rep.Findings {
		if f.Kind != "double-execution" {
			t.Errorf("unexpected finding %+v", f)
		}
		found[f.Key] = f.Count
	}
	for k, n := range truth {
		if (n > 1 || found[k] > 0) && found[k] != n {
			t.Errorf("key %s executed %d times (ledger); audit --listen says %d", k, n, found[k])
		}
	}
}

// runCall is one call of a run's JSON report, as the trace id test reads it.
type runCall struct {
	Step     string `json:"step"`
	Key      string `json:"key"`
	Outcome  string `json:"outcome"`
	Replayed bool   `json:"replayed"`
	TraceID  string `json:"trace_id"`
}

// runUntilFailed runs the scenario until run fails (at most 20 times) and returns every call
// of every run, how many of them the last run made, its exit code and its trace file.
func runUntilFailed(t *testing.T, dir, cfg, scen string) (calls []runCall, lastCalls int, code cmd.ExitCode, traceFile string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		report := filepath.Join(dir, fmt.Sprintf("run%d.json", attempt))
		traceFile = filepath.Join(dir, fmt.Sprintf("run%d.trace", attempt))
		ios, out, errOut := iostreams.Test()
		code = cmd.Execute(context.Background(), &cmd.Factory{IO: ios, Version: "test"},
			[]string{"run", "--no-color", "--config", cfg, "--json", report, "--trace", traceFile, scen})
		t.Logf("idemtest run (attempt %d): exit %d\n%s%s", attempt, code, out, errOut)
		b, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		if err := schemacheck.Validate("run", b); err != nil {
			t.Fatalf("run --json does not validate: %v", err)
		}
		var rep struct {
			Scenarios []struct {
				History []struct {
					Calls []runCall `json:"calls"`
				} `json:"history"`
			} `json:"scenarios"`
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		before := len(calls)
		for _, sc := range rep.Scenarios {
			for _, tr := range sc.History {
				calls = append(calls, tr.Calls...)
			}
		}
		lastCalls = len(calls) - before
		if code != cmd.ExitOK {
			return calls, lastCalls, code, traceFile
		}
		if attempt == 20 {
			t.Fatal("the naive server never executed a key twice in 20 runs of bursts")
		}
	}
}

func cutAny(s string, seps ...string) (string, string, bool) {
	for _, sep := range seps {
		if b, a, ok := strings.Cut(s, sep); ok {
			return b, a, ok
		}
	}
	return s, "", false
}

// TestRunTraceIDsMatchServerSpans is the link from a test to the server's own traces: a run
// against the instrumented naive server fails on a double execution, and the trace id its JSON
// report gives each execution is the trace of that execution's spans on the server (the
// http.server span and its refund.execute child), over plain HTTP and over MCP.
func TestRunTraceIDsMatchServerSpans(t *testing.T) {
	for _, transport := range []string{"http", "mcp"} {
		t.Run(transport, func(t *testing.T) {
			s := startInstrumented(t, "--idempotency", "naive", "--work", "50ms")
			dir := t.TempDir()
			endpointYAML := `    http: {url: "` + s.URL + `/tools/{tool}"}
    key: {header: Idempotency-Key}`
			if transport == "mcp" {
				endpointYAML = `    mcp: {url: "` + s.URL + `/mcp"}
    key: {arg: idempotencyKey}`
			}
			cfg := filepath.Join(dir, "idemtest.yaml")
			os.WriteFile(cfg, []byte("endpoints:\n  refunds:\n"+endpointYAML+"\n    mutating: [issue_refund]\n"), 0o644)
			scen := filepath.Join(dir, "burst.yaml")
			os.WriteFile(scen, []byte(`name: a burst of one key
endpoint: refunds
trials: 3
steps:
  - id: once
    call_tool: issue_refund
    args: {accountId: "acct_{{ session }}", amount: 5}
  - id: burst
    call_tool: issue_refund
    args: {accountId: "acct_{{ session }}", amount: 10}
    fanout: 8
`), 0o644)
			// Whether a burst overlaps depends on the machine's pace: runs go on until one
			// fails on a double execution (bounded), and every call of every run is checked.
			calls, lastCalls, code, traceFile := runUntilFailed(t, dir, cfg, scen)
			s.Stop(t)

			// The server's side: the trace of each call span, and of each execution's child span.
			callTrace := map[string]bool{}
			execTrace := map[string]int{}
			for _, sp := range readSpans(t, s.Spans) {
				switch {
				case sp.Name == spanRefundExecute:
					execTrace[sp.TraceID]++
				case sp.Attrs["gen_ai.tool.name"] == "issue_refund":
					callTrace[sp.TraceID] = true
				}
			}
			executions, lastExecutions := 0, 0
			reportExec := map[string]bool{}
			for i, c := range calls {
				if len(c.TraceID) != 32 {
					t.Errorf("call %s (key %s) has trace id %q", c.Step, c.Key, c.TraceID)
					continue
				}
				if !callTrace[c.TraceID] {
					t.Errorf("call %s (key %s): trace %s has no span on the server", c.Step, c.Key, c.TraceID)
				}
				if c.Outcome == "ok" && !c.Replayed {
					executions++
					if i >= len(calls)-lastCalls {
						lastExecutions++
					}
					reportExec[c.TraceID] = true
					if execTrace[c.TraceID] != 1 {
						t.Errorf("execution %s (key %s): trace %s holds %d %s spans on the server, want 1", c.Step, c.Key, c.TraceID, execTrace[c.TraceID], spanRefundExecute)
					}
				}
			}
			if executions != len(execTrace) {
				t.Errorf("the reports name %d executions, the server executed in %d traces", executions, len(execTrace))
			}
			for tid := range execTrace {
				if !reportExec[tid] {
					t.Errorf("the server executed in trace %s, which the report names for no execution", tid)
				}
			}
			// idemtest's own trace of the run carries the same ids: auditing it names the
			// server's traces of the double execution.
			_, arep := auditFile(t, traceFile, "--max-hit-rate", "off")
			doubles := 0
			for _, f := range arep["findings"].([]any) {
				fm := f.(map[string]any)
				if fm["kind"] != "double-execution" {
					continue
				}
				doubles++
				for _, c := range fm["calls"].([]any) {
					if tid, _ := c.(map[string]any)["trace_id"].(string); execTrace[tid] != 1 {
						t.Errorf("audit of the run's trace: finding call in trace %q, where the server executed %d times", tid, execTrace[tid])
					}
				}
			}
			if doubles == 0 {
				t.Error("audit of the run's trace found no double execution")
			}
			// Each trial's once and burst execute once each on a correct server: more is a double.
			if trials := lastCalls / (1 + 8); code != cmd.ExitFailed || lastExecutions <= 2*trials {
				t.Errorf("exit %d with %d executions of %d calls: want 1 and a double execution", code, lastExecutions, lastCalls)
			}
		})
	}
}
