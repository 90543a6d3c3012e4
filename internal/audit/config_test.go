package audit_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/idemtest/idemtest/cmd"
	"github.com/idemtest/idemtest/internal/iostreams"
)

// customSpans writes an OTLP JSON export of three tools/call spans of issue_refund under one key
// that only a custom attribute (app.key) carries: two executions and, 10 ms later, a replay
// marked by a custom attribute (app.replayed).
func customSpans(t *testing.T) string {
	t.Helper()
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var spans []*tracepb.Span
	for i := range 3 {
		attrs := []*commonpb.KeyValue{str("gen_ai.tool.name", "issue_refund"), str("mcp.method.name", "tools/call"),
			str("app.key", "k1"), str("mcp.session.id", "s1")}
		if i == 2 {
			attrs = append(attrs, str("app.replayed", "true"))
		}
		at := uint64(start.Add(time.Duration(i) * 10 * time.Millisecond).UnixNano())
		spans = append(spans, &tracepb.Span{TraceId: []byte(strings.Repeat(string(rune('a'+i)), 16)), SpanId: []byte(strings.Repeat(string(rune('a'+i)), 8)),
			Name: "tools/call issue_refund", Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: at, EndTimeUnixNano: at + 1e6, Attributes: attrs})
	}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}}
	b, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAuditConfigSection: the audit: section of idemtest.yaml sets the mapping (here a key and a
// replay marker in custom attributes) and the thresholds; a flag wins over it; an unknown or
// malformed field is bad input at its file:line:col, exit 2, without a report.
func TestAuditConfigSection(t *testing.T) {
	spans := customSpans(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "idemtest.yaml")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// By default the key is not found: three keyless calls of a tool nobody said mutates.
	if code, _, rep := auditCLI(t, spans, "--max-hit-rate", "off"); code != cmd.ExitOK || rep["keyed"].(float64) != 0 {
		t.Errorf("without a config: exit %d, %v keyed calls; want 0 and 0", code, rep["keyed"])
	}

	write("audit:\n  key_attrs: [app.key]\n  replay_attrs: [app.replayed]\n  max_hit_rate: off\n")
	code, _, rep := auditCLI(t, spans, "--config", cfg)
	if code != cmd.ExitFailed || rep["keyed"].(float64) != 3 || rep["replays"].(float64) != 1 || countKind(rep, "double-execution") != 1 {
		t.Errorf("with audit.key_attrs and replay_attrs: exit %d, %v keyed, %v replays, findings %v; want 1, 3, 1 and one double execution",
			code, rep["keyed"], rep["replays"], rep["findings"])
	}

	// A tool the config names idempotent by nature executed twice is no double execution; the
	// same from the flag.
	write("audit:\n  key_attrs: [app.key]\n  replay_attrs: [app.replayed]\n  max_hit_rate: off\n  natural: [issue_refund]\n")
	if code, _, rep := auditCLI(t, spans, "--config", cfg); code != cmd.ExitOK || countKind(rep, "double-execution") != 0 {
		t.Errorf("with audit.natural: exit %d, findings %v; want 0 and no double execution", code, rep["findings"])
	}
	write("audit:\n  key_attrs: [app.key]\n  replay_attrs: [app.replayed]\n  max_hit_rate: off\n")
	if code, _, rep := auditCLI(t, spans, "--config", cfg, "--natural", "issue_refund"); code != cmd.ExitOK || countKind(rep, "double-execution") != 0 {
		t.Errorf("with --natural: exit %d, findings %v; want 0 and no double execution", code, rep["findings"])
	}

	// The config's threshold applies (1 replay of 3 calls is over 10%), and a flag wins over it.
	write("audit:\n  key_attrs: [app.key]\n  replay_attrs: [app.replayed]\n  max_hit_rate: 10%\n")
	if _, _, rep := auditCLI(t, spans, "--config", cfg); countKind(rep, "hit-rate") != 1 {
		t.Errorf("audit.max_hit_rate 10%%: findings %v, want a hit-rate finding", rep["findings"])
	}
	if _, _, rep := auditCLI(t, spans, "--config", cfg, "--max-hit-rate", "50%"); countKind(rep, "hit-rate") != 0 {
		t.Errorf("--max-hit-rate 50%% over audit.max_hit_rate 10%%: findings %v, want no hit-rate finding", rep["findings"])
	}
	if _, _, rep := auditCLI(t, spans, "--config", cfg, "--key-attr", "other.key"); rep["keyed"].(float64) != 0 {
		t.Errorf("--key-attr over audit.key_attrs: %v keyed calls, want 0", rep["keyed"])
	}

	// Found as idemtest.yaml in the working directory when --config is not given.
	t.Chdir(dir)
	if _, _, rep := auditCLI(t, spans); rep["keyed"].(float64) != 3 {
		t.Errorf("idemtest.yaml in the working directory: %v keyed calls, want 3", rep["keyed"])
	}

	for _, bad := range []struct{ src, want string }{
		{"audit:\n  key_attr: [app.key]\n", `idemtest.yaml:2:3: unknown field "key_attr" in audit`},
		{"audit:\n  max_hit_rate: often\n", `idemtest.yaml:2:17: audit.max_hit_rate: "often" is no rate`},
	} {
		write(bad.src)
		jsonPath := filepath.Join(t.TempDir(), "audit.json")
		ios, _, errOut := iostreams.Test()
		code := cmd.Execute(context.Background(), &cmd.Factory{IO: ios, Version: "test"}, []string{"audit", "--json", jsonPath, spans})
		if code != cmd.ExitUsage || !strings.Contains(errOut.String(), bad.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", bad.src, code, errOut.String(), bad.want)
		}
		if _, err := os.Stat(jsonPath); err == nil {
			t.Errorf("%q: a report was written", bad.src)
		}
	}
}
