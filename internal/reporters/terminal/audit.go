package terminal

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/idemtest/idemtest/internal/audit"
	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/reporters"
)

// WriteAudit prints the audit of production traces for a person: a table with a row per tool
// (calls, keyed, executions, replays, conflicts, hit and conflict rates, double executions,
// fresh-key retries, keyless calls), each finding with its trace and span ids, then FAIL or
// PASS with the overall rates.
func WriteAudit(w io.Writer, rep *audit.Report, color bool) error {
	st := newStyles(w, color)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tCALLS\tKEYED\tEXECUTED\tREPLAYED\tCONFLICTS\tHIT RATE\tCONFLICT RATE\tDOUBLE\tFRESH-KEY RETRY\tKEYLESS")
	for _, t := range rep.Tools {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%d\t%d\n", reporters.Escape(t.Tool), t.Calls, t.Keyed, t.Executions, t.Replays, t.Conflicts,
			audit.Pct(t.HitRate), audit.Pct(t.ConflictRate), t.Findings[audit.DoubleExecution], t.Findings[audit.FreshKeyRetry], t.Keyless)
	}
	_ = tw.Flush()
	for _, f := range rep.Findings {
		mark := st.skip.Render("!")
		if f.Violation {
			mark = st.fail.Render("✗")
		}
		fmt.Fprintf(&b, "%s %s: %s\n", mark, f.Kind, reporters.Escape(f.Message))
		for _, r := range f.Calls {
			where := "at " + reporters.Escape(r.Where)
			if r.TraceID != "" {
				where = "trace " + r.TraceID + " span " + r.SpanID + " " + where
			}
			if r.Session != "" {
				where += " session " + reporters.Escape(r.Session)
			}
			fmt.Fprintf(&b, "    %s %s\n", st.dim.Render(r.At.Format("2006-01-02T15:04:05.000Z")), where)
		}
	}
	// Findings past the first of each tool and kind are counted, not listed: say how many.
	listed := map[string]int{}
	for _, f := range rep.Findings {
		listed[f.Tool+"\x00"+string(f.Kind)]++
	}
	for _, t := range rep.Tools {
		for _, k := range audit.Kinds {
			if n := t.Findings[k] - listed[t.Tool+"\x00"+string(k)]; n > 0 && listed[t.Tool+"\x00"+string(k)] > 0 {
				fmt.Fprintf(&b, "  … and %s of %s not listed (counted in the table)\n", plural.Count(n, "more "+string(k)+" finding"), reporters.Escape(t.Tool))
			}
		}
	}
	rates := fmt.Sprintf("hit rate %s, conflict rate %s over %s (%s)", audit.Pct(rep.HitRate), audit.Pct(rep.ConflictRate),
		plural.Count(rep.Keyed, "keyed call"), plural.Count(rep.Calls, "call"))
	switch {
	case rep.Interrupted:
		fmt.Fprintf(&b, "INTERRUPTED: the input was not read to its end; %s\n", rates)
	case rep.Violations > 0:
		fmt.Fprintf(&b, "%s %s; %s\n", st.fail.Render("FAIL:"), plural.Count(rep.Violations, "violation"), rates)
	case rep.Calls == 0:
		b.WriteString("nothing judged: no span in the input is a tool call (GenAI execute_tool, MCP tools/call or an HTTP server span)\n")
	default:
		fmt.Fprintf(&b, "%s %s\n", st.pass.Render("PASS:"), rates)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
