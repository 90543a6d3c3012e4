package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Spans the server emits with --otel-file or --otel-endpoint, following the OpenTelemetry
// semantic conventions idemtest audit reads:
//
//   - an http.server span per POST/PUT /tools/{name}: http.request.method, http.route,
//     http.response.status_code, the captured http.request.header.idempotency-key and
//     http.response.header.idempotent-replayed, and gen_ai.tool.name (the tool the route runs);
//   - a tools/call span per MCP call: mcp.method.name, gen_ai.tool.name, mcp.session.id,
//     gen_ai.tool.call.arguments, idempotency.key (when the key came in _meta),
//     idempotency.replayed, idempotency.conflict, and error.type tool_error for an isError
//     answer;
//   - a child span per real execution of a mutating tool (refund.execute, charge.execute)
//     carrying idempotency.key: what happened, whatever the answer said.
//
// Trace context comes from the traceparent header over HTTP and params._meta.traceparent over MCP.
const (
	spanRefundExecute  = "refund.execute"
	spanChargeExecute  = "charge.execute"
	spanAccountExecute = "account.execute"
)

var propagator = propagation.TraceContext{}

// setupTracing returns the tracer the service uses and a shutdown that flushes every span; with
// neither file nor endpoint the tracer records nothing.
func setupTracing(ctx context.Context, file, endpoint string) (trace.Tracer, func(context.Context) error, error) {
	if file == "" && endpoint == "" {
		return noop.NewTracerProvider().Tracer(""), func(context.Context) error { return nil }, nil
	}
	var opts []sdktrace.TracerProviderOption
	var closers []func() error
	if file != "" {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("--otel-file: %w", err)
		}
		closers = append(closers, f.Close)
		// The SDK's own OTLP/HTTP exporter encodes each batch as OTLP JSON; the transport
		// writes the request body as one line instead of sending it: the Collector's file
		// exporter format, which idemtest audit reads.
		exp, err := otlptracehttp.New(ctx,
			otlptracehttp.WithEndpointURL("http://otel-file.invalid/v1/traces"),
			otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON),
			otlptracehttp.WithHTTPClient(&http.Client{Transport: &lineWriter{w: f}}),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("--otel-file: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	if endpoint != "" {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
		if err != nil {
			for _, c := range closers {
				_ = c()
			}
			return nil, nil, fmt.Errorf("--otel-endpoint: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	res := resource.NewSchemaless(attribute.String("service.name", "refundserver"))
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithResource(res))...)
	shutdown := func(ctx context.Context) error {
		err := tp.Shutdown(ctx)
		for _, c := range closers {
			err = errors.Join(err, c())
		}
		return err
	}
	return tp.Tracer("github.com/idemtest/idemtest/examples/refundserver"), shutdown, nil
}

// lineWriter is the exporter's HTTP transport for --otel-file: it appends each request body
// (one ExportTraceServiceRequest in OTLP JSON, no newline inside) as a line and answers 200.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (lw *lineWriter) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	body = bytes.TrimSpace(body)
	lw.mu.Lock()
	_, err = lw.w.Write(append(body, '\n'))
	lw.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{},
		Body: http.NoBody, Request: r, ProtoMajor: 1, ProtoMinor: 1}, nil
}

// httpSpan starts the http.server span of a tool call, continuing the caller's traceparent.
func (s *service) httpSpan(r *http.Request, tool, key string) (context.Context, trace.Span) {
	ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	route := "/tools/{name}"
	ctx, span := s.tracer.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer))
	if span.IsRecording() {
		span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route),
			attribute.String("url.path", r.URL.Path), attribute.String("gen_ai.tool.name", tool))
		if key != "" {
			span.SetAttributes(attribute.StringSlice("http.request.header.idempotency-key", []string{key}))
		}
	}
	return ctx, span
}

// endHTTPSpan records the answer on the span and ends it.
func endHTTPSpan(span trace.Span, resp response) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("http.response.status_code", resp.Status))
		if resp.Replayed {
			span.SetAttributes(attribute.StringSlice("http.response.header.idempotent-replayed", []string{"true"}))
		}
		if resp.Status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(resp.Status))
			span.SetAttributes(attribute.String("error.type", fmt.Sprint(resp.Status)))
		}
	}
	span.End()
}

// mcpCarrier reads trace context from an MCP request's params._meta.
type mcpCarrier map[string]any

func (c mcpCarrier) Get(k string) string { s, _ := c[k].(string); return s }
func (c mcpCarrier) Set(k, v string)     { c[k] = v }
func (c mcpCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// mcpSpan starts the tools/call span of an MCP call, continuing params._meta.traceparent.
func (s *service) mcpSpan(ctx context.Context, meta map[string]any, tool, session string, args []byte, metaKey string) (context.Context, trace.Span) {
	if meta != nil {
		ctx = propagator.Extract(ctx, mcpCarrier(meta))
	}
	ctx, span := s.tracer.Start(ctx, "tools/call "+tool, trace.WithSpanKind(trace.SpanKindServer))
	if span.IsRecording() {
		span.SetAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", tool),
			attribute.String("gen_ai.operation.name", "execute_tool"))
		if session != "" {
			span.SetAttributes(attribute.String("mcp.session.id", session))
		}
		if len(args) > 0 {
			span.SetAttributes(attribute.String("gen_ai.tool.call.arguments", string(args)))
		}
		if metaKey != "" {
			span.SetAttributes(attribute.String("idempotency.key", metaKey))
		}
	}
	return ctx, span
}

// endMCPSpan records the answer on the span and ends it.
func endMCPSpan(span trace.Span, resp response, isError bool) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Bool("idempotency.replayed", resp.Replayed))
		if resp.Status == http.StatusConflict && strings.Contains(string(resp.Body), "idempotency_key_in_progress") {
			span.SetAttributes(attribute.Bool("idempotency.conflict", true))
		}
		if isError {
			span.SetAttributes(attribute.String("error.type", "tool_error"))
			span.SetStatus(codes.Error, "tool_error")
		}
	}
	span.End()
}

// executeSpan marks one real execution of a mutating tool, under the call's span.
func (s *service) executeSpan(ctx context.Context, name, key string) (context.Context, trace.Span) {
	ctx, span := s.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(time.Now()))
	if key != "" && span.IsRecording() {
		span.SetAttributes(attribute.String("idempotency.key", key))
	}
	return ctx, span
}
