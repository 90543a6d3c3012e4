package audit

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/outcome"
)

// Mapping names where a span carries what the audit reads; an empty list is the default, from
// the OpenTelemetry semantic conventions.
type Mapping struct {
	// KeyArgs are the argument names that hold the idempotency key.
	KeyArgs []string
	// KeyAttrs are span attributes that hold the key (a captured request header, or an
	// attribute the server sets).
	KeyAttrs []string
	// SessionAttrs are attributes that name the session (conversation) of a call.
	SessionAttrs []string
	// ReplayAttrs are attributes whose true value marks an answer as a replay.
	ReplayAttrs []string
	// ExecutionSpan, when set, is a glob (path.Match) of span names: a call executed once per
	// child span of its that matches and did not end in error (the payment processor's client
	// span, an INSERT), whatever its answer said; a call without one did not execute. "" keeps
	// the default: an ok answer that is no replay is an execution.
	ExecutionSpan string
}

// The defaults of a Mapping.
var (
	DefaultKeyArgs      = []string{"idempotencyKey", "idempotency_key", "idempotency-key", "idempotentKey"}
	DefaultKeyAttrs     = []string{"idempotency.key", "http.request.header.idempotency-key"}
	DefaultSessionAttrs = []string{"gen_ai.conversation.id", "mcp.session.id", "session.id"}
	DefaultReplayAttrs  = []string{"idempotency.replayed", "http.response.header.idempotent-replayed"}
)

func (m Mapping) withDefaults() Mapping {
	or := func(v, d []string) []string {
		if len(v) == 0 {
			return d
		}
		return v
	}
	return Mapping{KeyArgs: or(m.KeyArgs, DefaultKeyArgs), KeyAttrs: or(m.KeyAttrs, DefaultKeyAttrs),
		SessionAttrs: or(m.SessionAttrs, DefaultSessionAttrs), ReplayAttrs: or(m.ReplayAttrs, DefaultReplayAttrs),
		ExecutionSpan: m.ExecutionSpan}
}

// unmarshalOTLP decodes one line of the Collector's file exporter: an ExportTraceServiceRequest
// in OTLP JSON. Unknown fields are skipped (a newer Collector may add some).
func unmarshalOTLP(line []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	req := &coltracepb.ExportTraceServiceRequest{}
	err := protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(line, req)
	return req, err
}

// spanID is a trace or span id as hex. OTLP JSON spells ids in hex where protojson expects
// base64; hex digits are base64 letters, so a hex id decodes, as base64, to 3/4 of its length
// (12 bytes for a span id, 24 for a trace id), and encoding those bytes back gives the hex
// text unchanged. Ids that were base64 (protojson's own output) decode to 8 or 16 bytes.
func spanID(b []byte) string {
	switch len(b) {
	case 12, 24:
		return strings.ToLower(base64.StdEncoding.EncodeToString(b))
	}
	return hex.EncodeToString(b)
}

// attrs is a span's attributes by name.
type attrs map[string]*commonpb.AnyValue

func attrsOf(kvs []*commonpb.KeyValue) attrs {
	a := make(attrs, len(kvs))
	for _, kv := range kvs {
		a[kv.GetKey()] = kv.GetValue()
	}
	return a
}

// str is an attribute as text: a string, a number, a bool, or the first element of an array
// (captured headers are string arrays).
func (a attrs) str(name string) string {
	v, ok := a[name]
	if !ok || v == nil {
		return ""
	}
	if arr := v.GetArrayValue(); arr != nil {
		if len(arr.GetValues()) == 0 {
			return ""
		}
		v = arr.GetValues()[0]
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	}
	return ""
}

func (a attrs) first(names []string) (string, string) {
	for _, n := range names {
		if s := a.str(n); s != "" {
			return s, n
		}
	}
	return "", ""
}

// jsonOf is an attribute holding JSON: a string of JSON text, or a structured value. ok is
// false when it is absent.
func (a attrs) jsonOf(name string) (json.RawMessage, bool) {
	v, ok := a[name]
	if !ok || v == nil {
		return nil, false
	}
	if s, isStr := v.GetValue().(*commonpb.AnyValue_StringValue); isStr {
		t := bytes.TrimSpace([]byte(s.StringValue))
		if json.Valid(t) {
			return t, true
		}
		b, _ := json.Marshal(s.StringValue)
		return b, true
	}
	b, err := json.Marshal(anyValue(v))
	return b, err == nil
}

// anyValue converts an OTLP value to the JSON value it stands for.
func anyValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, anyValue(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		out := map[string]any{}
		for _, kv := range x.KvlistValue.GetValues() {
			out[kv.GetKey()] = anyValue(kv.GetValue())
		}
		return out
	}
	return nil
}

func truthy(s string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	return err == nil && b
}

// safeMethods are the HTTP methods that change nothing; a route called with another is
// mutating.
var safeMethods = []string{"GET", "HEAD", "OPTIONS", "TRACE"}

// spanCall maps a span to a tool call by the semantic conventions, ok false when the span is
// no tool call: a GenAI execute_tool span or an MCP tools/call span (gen_ai.tool.name), or an
// HTTP server span (http.request.method and http.route or url.path).
func spanCall(sp *tracepb.Span, m Mapping) (Call, bool) {
	a := attrsOf(sp.GetAttributes())
	var c Call
	method := a.str("http.request.method")
	if method == "" {
		method = a.str("http.method")
	}
	switch tool := a.str("gen_ai.tool.name"); {
	case tool != "":
		c.Tool = tool
	case a.str("mcp.method.name") == "tools/call":
		c.Tool = a.str("mcp.tool.name")
		if c.Tool == "" {
			return c, false
		}
	case method != "" && sp.GetKind() == tracepb.Span_SPAN_KIND_SERVER:
		route := a.str("http.route")
		if route == "" {
			route = a.str("url.path")
		}
		if route == "" {
			return c, false
		}
		c.Tool = strings.ToUpper(method) + " " + route
		c.Mutating = !slices.Contains(safeMethods, strings.ToUpper(method))
	default:
		return c, false
	}
	c.TraceID, c.SpanID = spanID(sp.GetTraceId()), spanID(sp.GetSpanId())
	c.Start = time.Unix(0, int64(sp.GetStartTimeUnixNano())).UTC()
	if end := sp.GetEndTimeUnixNano(); end >= sp.GetStartTimeUnixNano() {
		c.DurationUS = int64(end-sp.GetStartTimeUnixNano()) / 1000
	}
	c.Session, _ = a.first(m.SessionAttrs)
	if args, ok := a.jsonOf("gen_ai.tool.call.arguments"); ok {
		c.Args, c.ArgsKnown = args, true
		var obj map[string]any
		if json.Unmarshal(args, &obj) == nil {
			for _, n := range m.KeyArgs {
				if s, isStr := obj[n].(string); isStr && s != "" {
					c.Key, c.KeyCarrier = s, "arg "+n
					break
				}
			}
		}
	}
	if c.Key == "" {
		if k, from := a.first(m.KeyAttrs); k != "" {
			c.Key, c.KeyCarrier = k, "header "+strings.TrimPrefix(from, "http.request.header.")
		}
	}
	if r, ok := a.jsonOf("gen_ai.tool.call.result"); ok {
		c.Result = r
	}
	replay, _ := a.first(m.ReplayAttrs)
	c.Replayed = truthy(replay)
	c.Outcome, c.Status, c.Conflict = classify(sp, a, c.Result)
	if c.Outcome == outcome.OK && !c.Replayed && len(c.Result) > 0 {
		var v any
		if json.Unmarshal(c.Result, &v) == nil {
			c.Replayed = truthy(strings.TrimSpace(jsonText(jsonvalue.Lookup(v, "_meta.idempotentReplayed"))))
		}
	}
	return c, true
}

func jsonText(v any) string {
	if b, ok := v.(bool); ok {
		return strconv.FormatBool(b)
	}
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

// classify is a span's outcome (DESIGN §2, §8): an HTTP status as idemtest classifies it; an
// MCP isError (error.type tool_error) or a JSON-RPC error is a refusal; another error.type or
// an error status without an answer is unknown (a timeout, a lost connection); an answer shaped
// like an error is a refusal. conflict marks a duplicate refused while in flight (409, or
// idempotency.conflict).
func classify(sp *tracepb.Span, a attrs, result json.RawMessage) (o outcome.Outcome, status int, conflict bool) {
	conflict = truthy(a.str("idempotency.conflict"))
	if s := a.str("http.response.status_code"); s != "" {
		status, _ = strconv.Atoi(s)
	} else if s := a.str("http.status_code"); s != "" {
		status, _ = strconv.Atoi(s)
	}
	if status == 409 {
		conflict = true
	}
	if conflict {
		return outcome.Fail, status, true
	}
	if status != 0 {
		if o, _ := endpoint.ClassifyStatus(status); o != outcome.OK {
			return o, status, false
		}
	}
	switch et := a.str("error.type"); {
	case et == "tool_error":
		return outcome.Fail, status, false
	case et != "" && isInt(et):
		return outcome.Fail, status, false // a JSON-RPC error code
	case et != "":
		return outcome.Info, status, false
	}
	if len(result) > 0 {
		var v any
		if json.Unmarshal(result, &v) == nil {
			if m, ok := v.(map[string]any); ok && m["isError"] == true {
				return outcome.Fail, status, false
			}
			if endpoint.ErrorShaped(v) {
				return outcome.Fail, status, false
			}
		}
	}
	if sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		return outcome.Info, status, false
	}
	return outcome.OK, status, false
}

func isInt(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// canonResult is an answer as the replay rule compares it: canonical JSON.
func canonResult(r json.RawMessage) string {
	var v any
	if json.Unmarshal(r, &v) != nil {
		return string(r)
	}
	return jsonvalue.Canonical(v)
}
