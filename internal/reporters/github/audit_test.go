package github

import (
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/audit"
)

// TestAuditSummary: the audit's job summary gives the verdict and rates, a row per tool, and
// each finding with the trace and span ids of its calls; text from the input cannot break the
// table or inject markup.
func TestAuditSummary(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rep := &audit.Report{Calls: 4, Keyed: 4, Executions: 3, Replays: 1, Violations: 1, HitRate: 0.25,
		Tools: []audit.ToolStats{{Tool: "issue|refund<script>", Calls: 4, Keyed: 4, Executions: 3, Replays: 1, HitRate: 0.25,
			Findings: map[audit.Kind]int{audit.DoubleExecution: 1}}},
		Findings: []audit.Finding{{Kind: audit.DoubleExecution, Violation: true, Tool: "issue|refund<script>", Key: "k1", Count: 2,
			Message: "key \"k1\" executed 2 times", Calls: []audit.Ref{
				{TraceID: "4bf92f3577b34da6a3ce929d0e0e4737", SpanID: "00f067aa0ba902b8", Session: "s_1", At: at, Where: "spans.jsonl:1"},
				{TraceID: "x`|y", SpanID: "00f067aa0ba902b9", At: at, Where: "spans.jsonl:2"}}}}}
	got := auditSummary(rep)
	lines := strings.Split(got, "\n")
	if !strings.HasPrefix(lines[0], "### ❌ idemtest audit: 1 violation — hit rate 25%") {
		t.Errorf("heading %q", lines[0])
	}
	// A table row has as many unescaped cell separators as the header.
	cells := func(l string) int { return strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") }
	if cells(lines[2]) != cells(lines[4]) || !strings.Contains(lines[4], `issue\|refund&lt;script&gt;`) {
		t.Errorf("tool row %q does not match the header %q, or the tool is not escaped", lines[4], lines[2])
	}
	for _, want := range []string{
		"- ❌ **double-execution**: key \"k1\" executed 2 times",
		"  - 2026-01-02T03:04:05.000Z trace `4bf92f3577b34da6a3ce929d0e0e4737` span `00f067aa0ba902b8`, `spans.jsonl:1`, session s\\_1",
		"  - 2026-01-02T03:04:05.000Z trace `x'\\|y` span `00f067aa0ba902b9`, `spans.jsonl:2`",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("summary lacks line %q:\n%s", want, got)
		}
	}
	rep.Violations, rep.Findings = 0, nil
	if got := auditSummary(rep); !strings.HasPrefix(got, "### ✅ idemtest audit: no violation") {
		t.Errorf("passing audit: %q", strings.SplitN(got, "\n", 2)[0])
	}
}
