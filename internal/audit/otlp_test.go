package audit

import (
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/idemtest/idemtest/internal/outcome"
)

func kv(k string, v any) *commonpb.KeyValue {
	switch x := v.(type) {
	case string:
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}}
	case int:
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(x)}}}
	case bool:
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: x}}}
	case []string:
		arr := &commonpb.ArrayValue{}
		for _, s := range x {
			arr.Values = append(arr.Values, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}})
		}
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}}
	}
	panic(k)
}

// TestSpanCall maps spans of each convention to calls: which are tool calls, their key,
// session, outcome and replay marker.
func TestSpanCall(t *testing.T) {
	tool := func(more ...*commonpb.KeyValue) []*commonpb.KeyValue {
		return append([]*commonpb.KeyValue{kv("gen_ai.operation.name", "execute_tool"), kv("gen_ai.tool.name", "refund"),
			kv("gen_ai.conversation.id", "conv"), kv("gen_ai.tool.call.arguments", `{"a":1,"idempotency_key":"k1"}`)}, more...)
	}
	tests := []struct {
		name     string
		kind     tracepb.Span_SpanKind
		attrs    []*commonpb.KeyValue
		errStat  bool
		notCall  bool
		tool     string
		key      string
		session  string
		outcome  outcome.Outcome
		replayed bool
		conflict bool
	}{
		{name: "execute_tool ok", attrs: tool(kv("gen_ai.tool.call.result", `{"id":1}`)), tool: "refund", key: "k1", session: "conv", outcome: outcome.OK},
		{name: "status error", attrs: tool(kv("gen_ai.tool.call.result", `{"status":"error"}`)), tool: "refund", key: "k1", session: "conv", outcome: outcome.Fail},
		{name: "success false", attrs: tool(kv("gen_ai.tool.call.result", `{"success":false}`)), tool: "refund", key: "k1", session: "conv", outcome: outcome.Fail},
		{name: "ok false", attrs: tool(kv("gen_ai.tool.call.result", `{"ok":false}`)), tool: "refund", key: "k1", session: "conv", outcome: outcome.Fail},
		{name: "lone error", attrs: tool(kv("gen_ai.tool.call.result", `{"error":"no"}`)), tool: "refund", key: "k1", session: "conv", outcome: outcome.Fail},
		{name: "timeout", attrs: tool(kv("error.type", "timeout")), errStat: true, tool: "refund", key: "k1", session: "conv", outcome: outcome.Info},
		{name: "span error without answer", attrs: tool(), errStat: true, tool: "refund", key: "k1", session: "conv", outcome: outcome.Info},
		{name: "replay attribute", attrs: tool(kv("idempotency.replayed", true)), tool: "refund", key: "k1", session: "conv", outcome: outcome.OK, replayed: true},
		{name: "MCP meta replay", attrs: tool(kv("gen_ai.tool.call.result", `{"content":[],"_meta":{"idempotentReplayed":true}}`)), tool: "refund", key: "k1", session: "conv", outcome: outcome.OK, replayed: true},
		{name: "MCP tools/call isError", kind: tracepb.Span_SPAN_KIND_SERVER, attrs: []*commonpb.KeyValue{kv("mcp.method.name", "tools/call"), kv("gen_ai.tool.name", "refund"),
			kv("mcp.session.id", "m1"), kv("jsonrpc.request.id", "7"), kv("error.type", "tool_error"), kv("idempotency.key", "k9")},
			tool: "refund", key: "k9", session: "m1", outcome: outcome.Fail},
		{name: "HTTP server 409", kind: tracepb.Span_SPAN_KIND_SERVER, attrs: []*commonpb.KeyValue{kv("http.request.method", "POST"), kv("http.route", "/charges"),
			kv("http.response.status_code", 409), kv("http.request.header.idempotency-key", []string{"h1"})},
			tool: "POST /charges", key: "h1", outcome: outcome.Fail, conflict: true},
		{name: "HTTP server replayed", kind: tracepb.Span_SPAN_KIND_SERVER, attrs: []*commonpb.KeyValue{kv("http.request.method", "POST"), kv("http.route", "/charges"),
			kv("http.response.status_code", 200), kv("http.request.header.idempotency-key", []string{"h1"}), kv("http.response.header.idempotent-replayed", []string{"true"})},
			tool: "POST /charges", key: "h1", outcome: outcome.OK, replayed: true},
		{name: "HTTP server 503", kind: tracepb.Span_SPAN_KIND_SERVER, attrs: []*commonpb.KeyValue{kv("http.request.method", "POST"), kv("http.route", "/charges"),
			kv("http.response.status_code", 503)}, tool: "POST /charges", outcome: outcome.Info},
		{name: "HTTP client span is no tool call", kind: tracepb.Span_SPAN_KIND_CLIENT, attrs: []*commonpb.KeyValue{kv("http.request.method", "POST"), kv("http.route", "/charges")}, notCall: true},
		{name: "chat span is no tool call", attrs: []*commonpb.KeyValue{kv("gen_ai.operation.name", "chat")}, notCall: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp := &tracepb.Span{TraceId: make([]byte, 16), SpanId: make([]byte, 8), Kind: tt.kind, Attributes: tt.attrs}
			if tt.errStat {
				sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR}
			}
			c, ok := spanCall(sp, Mapping{}.withDefaults())
			if ok == tt.notCall {
				t.Fatalf("tool call %v, want %v", ok, !tt.notCall)
			}
			if tt.notCall {
				return
			}
			if c.Tool != tt.tool || c.Key != tt.key || c.Session != tt.session || c.Outcome != tt.outcome || c.Replayed != tt.replayed || c.Conflict != tt.conflict {
				t.Errorf("got tool %q key %q session %q outcome %s replayed %v conflict %v", c.Tool, c.Key, c.Session, c.Outcome, c.Replayed, c.Conflict)
			}
			if c.TraceID != "00000000000000000000000000000000" || c.SpanID != "0000000000000000" {
				t.Errorf("ids %q %q", c.TraceID, c.SpanID)
			}
		})
	}
}

// TestSpanIDHex: the Collector writes ids in hex, protojson reads them as base64; the id comes
// back as the hex the file holds.
func TestSpanIDHex(t *testing.T) {
	line := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","kind":2,` +
		`"attributes":[{"key":"gen_ai.tool.name","value":{"stringValue":"t"}}]}]}]}]}`
	req, err := unmarshalOTLP([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := spanCall(req.ResourceSpans[0].ScopeSpans[0].Spans[0], Mapping{}.withDefaults())
	if c.TraceID != "5b8efff798038103d269b633813fc60c" || c.SpanID != "eee19b7ec3c1b174" {
		t.Errorf("ids %q %q", c.TraceID, c.SpanID)
	}
}
