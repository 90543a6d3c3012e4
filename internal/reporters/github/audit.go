package github

import (
	"fmt"
	"io"
	"strings"

	"github.com/idemtest/idemtest/internal/audit"
	"github.com/idemtest/idemtest/internal/plural"
)

// maxSummaryFindings bounds the findings the audit's job summary lists; the table counts all.
const maxSummaryFindings = 20

// AuditSummary writes the Markdown job summary of idemtest audit ($GITHUB_STEP_SUMMARY): the
// verdict with the rates, the table per tool, and each finding with the trace and span ids of
// its calls, so that a scheduled audit's summary opens the traces in the team's backend.
// Everything read from the input (tools, keys, sessions, ids) is escaped.
func AuditSummary(w io.Writer, rep *audit.Report) error {
	_, err := io.WriteString(w, auditSummary(rep))
	return err
}

func auditSummary(rep *audit.Report) string {
	var b strings.Builder
	rates := fmt.Sprintf("hit rate %s, conflict rate %s over %s (%s)", audit.Pct(rep.HitRate), audit.Pct(rep.ConflictRate),
		plural.Count(rep.Keyed, "keyed call"), plural.Count(rep.Calls, "call"))
	switch {
	case rep.Interrupted:
		fmt.Fprintf(&b, "### ⚠️ interrupted: idemtest audit read part of its input — %s\n\n", rates)
	case rep.Failed():
		fmt.Fprintf(&b, "### ❌ idemtest audit: %s — %s\n\n", plural.Count(rep.Violations, "violation"), rates)
	default:
		fmt.Fprintf(&b, "### ✅ idemtest audit: no violation — %s\n\n", rates)
	}
	if len(rep.Tools) > 0 {
		b.WriteString("| tool | calls | keyed | executed | replayed | conflicts | hit rate | conflict rate | double | fresh-key retry | keyless |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, t := range rep.Tools {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %s | %s | %d | %d | %d |\n", mdText(t.Tool), t.Calls, t.Keyed, t.Executions, t.Replays, t.Conflicts,
				audit.Pct(t.HitRate), audit.Pct(t.ConflictRate), t.Findings[audit.DoubleExecution], t.Findings[audit.FreshKeyRetry], t.Keyless)
		}
		b.WriteString("\n")
	}
	for i, f := range rep.Findings {
		if i == maxSummaryFindings {
			fmt.Fprintf(&b, "…and %s more in the JSON report.\n", plural.Count(len(rep.Findings)-i, "finding"))
			break
		}
		mark := "⚠️"
		if f.Violation {
			mark = "❌"
		}
		fmt.Fprintf(&b, "- %s **%s**: %s\n", mark, f.Kind, mdText(f.Message))
		for _, r := range f.Calls {
			where := "`" + mdCode(r.Where) + "`"
			if r.TraceID != "" {
				where = fmt.Sprintf("trace `%s` span `%s`, %s", mdCode(r.TraceID), mdCode(r.SpanID), where)
			}
			if r.Session != "" {
				where += ", session " + mdText(r.Session)
			}
			fmt.Fprintf(&b, "  - %s %s\n", r.At.Format("2006-01-02T15:04:05.000Z"), where)
		}
	}
	return b.String()
}
