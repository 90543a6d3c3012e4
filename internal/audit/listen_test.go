package audit_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemtest/idemtest/internal/audit"
)

// listen starts audit.Listen on a free loopback port and returns its address, the calls it
// received so far (read after stop), and stop, which ends it as Ctrl-C does.
func listen(t *testing.T, o audit.ListenOptions) (string, *[]audit.Call, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	o.Addr = "127.0.0.1:0"
	o.Ready = func(addr string) { ready <- addr }
	var calls []audit.Call
	done := make(chan error, 1)
	go func() {
		done <- audit.Listen(ctx, o, audit.Mapping{}, func(c audit.Call) error { calls = append(calls, c); return nil })
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("Listen: %v", err)
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = stop() })
	return addr, &calls, stop
}

// TestListenOTelSDK: the OpenTelemetry Go SDK's OTLP/HTTP exporter, in each encoding it offers
// (protobuf, JSON, gzip), delivers its spans to audit --listen.
func TestListenOTelSDK(t *testing.T) {
	for name, opts := range map[string][]otlptracehttp.Option{
		"protobuf":      nil,
		"json":          {otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON)},
		"protobuf gzip": {otlptracehttp.WithCompression(otlptracehttp.GzipCompression)},
		"json gzip":     {otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON), otlptracehttp.WithCompression(otlptracehttp.GzipCompression)},
	} {
		t.Run(name, func(t *testing.T) {
			addr, calls, stop := listen(t, audit.ListenOptions{})
			ctx := context.Background()
			exp, err := otlptracehttp.New(ctx, append(opts, otlptracehttp.WithEndpointURL("http://"+addr+"/v1/traces"))...)
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithMaxExportBatchSize(2)))
			tr := tp.Tracer("test")
			var ids []string
			for i, replayed := range []bool{false, false, true} {
				_, sp := tr.Start(ctx, "tools/call issue_refund", trace.WithSpanKind(trace.SpanKindServer))
				sp.SetAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", "issue_refund"),
					attribute.String("mcp.session.id", "s1"), attribute.String("gen_ai.tool.call.arguments", `{"amount":1,"idempotencyKey":"k1"}`),
					attribute.Bool("idempotency.replayed", replayed), attribute.Int("n", i))
				ids = append(ids, sp.SpanContext().SpanID().String())
				sp.End()
			}
			if err := tp.Shutdown(ctx); err != nil {
				t.Fatalf("export: %v", err)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if len(*calls) != 3 {
				t.Fatalf("received %d calls, want 3", len(*calls))
			}
			got := map[string]audit.Call{}
			for _, c := range *calls {
				got[c.SpanID] = c
			}
			for i, id := range ids {
				c, ok := got[id]
				if !ok || c.Key != "k1" || c.Session != "s1" || c.Tool != "issue_refund" || c.Replayed != (i == 2) {
					t.Errorf("span %s: %+v", id, c)
				}
			}
			a := audit.New(audit.Options{MaxHitRate: -1, MaxConflictRate: -1})
			for _, c := range *calls {
				a.Add(c)
			}
			if rep := a.Report(); rep.Violations != 1 || rep.Findings[0].Kind != audit.DoubleExecution {
				t.Errorf("report %+v: want one double execution", rep)
			}
		})
	}
}

// TestListenRefuses: what is not an OTLP trace export is refused with the status OTLP/HTTP
// names, and the receiver goes on; a non-loopback address is refused before listening.
func TestListenRefuses(t *testing.T) {
	var log bytes.Buffer
	addr, calls, stop := listen(t, audit.ListenOptions{MaxBody: 1 << 10, Log: &log})
	url := "http://" + addr + "/v1/traces"
	post := func(ct, enc string, body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		if enc != "" {
			req.Header.Set("Content-Encoding", enc)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name, ct, enc string
		body          []byte
		want          int
	}{
		{"text", "text/plain", "", []byte("hi"), 415},
		{"too large", "application/json", "", bytes.Repeat([]byte(" "), 2<<10), 413},
		{"not OTLP JSON", "application/json", "", []byte(`{"resourceSpans":3}`), 400},
		{"not protobuf", "application/x-protobuf", "", []byte{0xff, 0xff, 0xff}, 400},
		{"bad gzip", "application/json", "gzip", []byte("nope"), 400},
		{"brotli", "application/json", "br", []byte("{}"), 415},
		{"empty export", "application/json", "", []byte(`{}`), 200},
	} {
		if got := post(tc.ct, tc.enc, tc.body); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("GET: status %d, want 405", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(*calls) != 0 {
		t.Errorf("%d calls from refused exports", len(*calls))
	}
	if n := strings.Count(log.String(), "refused an export"); n != 7 {
		t.Errorf("%d refusals logged, want 7:\n%s", n, log.String())
	}
	for _, a := range []string{"0.0.0.0:4318", ":4318", "192.0.2.1:4318", "example.com:4318"} {
		if err := audit.CheckLoopback(a); err == nil {
			t.Errorf("CheckLoopback(%q) accepted", a)
		}
	}
	for _, a := range []string{"127.0.0.1:4318", "[::1]:0", "localhost:4318"} {
		if err := audit.CheckLoopback(a); err != nil {
			t.Errorf("CheckLoopback(%q): %v", a, err)
		}
	}
}

// TestListenEnds: --idle ends the listening once exports stop (never before the first), and
// --duration ends it whatever came; both report what was received.
func TestListenEnds(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		ready := make(chan string, 1)
		var calls []audit.Call
		done := make(chan error, 1)
		go func() {
			done <- audit.Listen(context.Background(), audit.ListenOptions{Addr: "127.0.0.1:0", Idle: 20 * time.Millisecond,
				Ready: func(a string) { ready <- a }}, audit.Mapping{}, func(c audit.Call) error { calls = append(calls, c); return nil })
		}()
		addr := <-ready
		ctx := context.Background()
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL("http://"+addr+"/v1/traces"))
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		_, sp := tp.Tracer("test").Start(ctx, "tools/call x", trace.WithSpanKind(trace.SpanKindServer))
		sp.SetAttributes(attribute.String("gen_ai.tool.name", "x"))
		sp.End()
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil || len(calls) != 1 {
			t.Errorf("Listen: %v, %d calls; want nil and 1", err, len(calls))
		}
	})
	t.Run("duration", func(t *testing.T) {
		err := audit.Listen(context.Background(), audit.ListenOptions{Addr: "127.0.0.1:0", Duration: time.Millisecond}, audit.Mapping{},
			func(audit.Call) error { return nil })
		if err != nil {
			t.Error(err)
		}
	})
}
