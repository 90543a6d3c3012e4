// Command auditgen writes a synthetic OTLP JSON export, one ExportTraceServiceRequest per line
// as the Collector's file exporter writes it, for measuring idemtest audit on large inputs
// (BENCHMARKS.md): GenAI execute_tool spans of one tool, 100 calls a second, each with its own
// key; one call in 40 is retried and replayed, one in 1000 is executed twice.
//
//	go run ./bench/auditgen -mb 100 > /tmp/export.jsonl
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"os"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func main() {
	mb := flag.Int("mb", 100, "approximate size of the export in MB")
	perLine := flag.Int("spans", 100, "spans per line (one export request)")
	flag.Parse()
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer w.Flush()
	const start = uint64(1767323040) * 1e9
	const step = uint64(10e6) // 100 calls a second
	written, n := 0, 0
	span := func(i int, key, args, result string, replayed bool) *tracepb.Span {
		tid, sid := make([]byte, 16), make([]byte, 8)
		binary.BigEndian.PutUint64(tid[8:], uint64(n)+1)
		binary.BigEndian.PutUint64(sid, uint64(n)+1)
		t := start + uint64(n)*step
		n++
		attrs := []*commonpb.KeyValue{str("gen_ai.operation.name", "execute_tool"), str("gen_ai.tool.name", "issue_refund"),
			str("gen_ai.conversation.id", fmt.Sprintf("conv-%d", i%5000)), str("gen_ai.tool.call.arguments", args),
			str("gen_ai.tool.call.result", result)}
		if replayed {
			attrs = append(attrs, &commonpb.KeyValue{Key: "idempotency.replayed", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}})
		}
		return &tracepb.Span{TraceId: tid, SpanId: sid, Name: "execute_tool issue_refund", Kind: tracepb.Span_SPAN_KIND_INTERNAL,
			StartTimeUnixNano: t, EndTimeUnixNano: t + 20e6, Attributes: attrs}
	}
	for op := 0; written < *mb<<20; {
		spans := make([]*tracepb.Span, 0, *perLine)
		for len(spans) < *perLine {
			key := fmt.Sprintf("key-%012d", op)
			args := fmt.Sprintf(`{"orderId":"o-%d","amount":%d,"reason":"customer request","idempotencyKey":"%s"}`, op, op%500+1, key)
			result := fmt.Sprintf(`{"refundId":"r-%d","status":"succeeded","amount":%d}`, op, op%500+1)
			spans = append(spans, span(op, key, args, result, false))
			switch {
			case op%1000 == 999:
				spans = append(spans, span(op, key, args, fmt.Sprintf(`{"refundId":"r-%d-again","status":"succeeded"}`, op), false))
			case op%40 == 0:
				spans = append(spans, span(op, key, args, result, true))
			}
			op++
		}
		req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
			Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "refund-agent")}},
			ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
		}}}
		b, err := protojson.Marshal(req)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		written += len(b) + 1
	}
	fmt.Fprintf(os.Stderr, "auditgen: %d spans, %d MB\n", n, written>>20)
}
