package reporters

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/result"
)

// History formats a trial's calls as an aligned table: the evidence behind a verdict.
func History(t *result.Trial) string {
	if t == nil || len(t.Calls) == 0 {
		return ""
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	// An instance column when the calls went to an endpoint of several instances (DESIGN §11).
	instances := slices.ContainsFunc(t.Calls, func(c result.Call) bool { return c.Instance != nil })
	// A trace column when the calls carried a traceparent: the server's own trace of each.
	traces := slices.ContainsFunc(t.Calls, func(c result.Call) bool { return c.TraceID != "" })
	head := "step\tcopy\tattempt\tkey\toutcome\tstatus\treplayed\tms\t"
	if instances {
		head = "step\tcopy\tattempt\tinstance\tkey\toutcome\tstatus\treplayed\tms\t"
	}
	if traces {
		head += "trace\t"
	}
	fmt.Fprintln(tw, head+"error")
	for _, c := range t.Calls {
		attempt := fmt.Sprint(c.Attempt)
		if instances {
			inst := "-"
			if c.Instance != nil {
				inst = fmt.Sprint(c.Instance.Index)
			}
			attempt += "\t" + inst
		}
		cp := "-"
		if c.Copy > 0 {
			cp = fmt.Sprint(c.Copy)
		}
		status := fmt.Sprint(c.Status)
		if c.Status == 0 {
			status = "-"
		}
		if c.Lost {
			status += " (lost)"
		}
		key := c.Key
		if key == "" {
			key = "(none)"
		}
		errCol := OneLine(c.Error, 80)
		if traces {
			tid := Escape(c.TraceID)
			if tid == "" {
				tid = "-"
			}
			errCol = tid + "\t" + errCol
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%v\t%.1f\t%s\n", Escape(c.Step), cp, attempt, Escape(key), c.Outcome, status, c.Replayed,
			float64(c.Duration.Microseconds())/1000, errCol)
	}
	tw.Flush()
	// The answers lose_response discarded: the agent never saw them, the reader should, to
	// compare them with what the retry got.
	for _, c := range t.Calls {
		if c.Lost && c.Result != nil {
			fmt.Fprintf(&b, "discarded answer of %s: %s\n", callName(c), OneLine(jsonvalue.Canonical(c.Result), 240))
		}
	}
	return b.String()
}

// callName names a call in a trial: its step, and its copy or attempt when there are several.
func callName(c result.Call) string {
	name := Escape(c.Step)
	if c.Copy > 0 {
		name += fmt.Sprintf(" copy %d", c.Copy)
	}
	if c.Attempt > 1 {
		name += fmt.Sprintf(" attempt %d", c.Attempt)
	}
	if c.Instance != nil {
		name += fmt.Sprintf(" on instance %d", c.Instance.Index)
	}
	return name
}

// OneLine is s escaped on one line, its runs of white space made one space, cut to n bytes.
func OneLine(s string, n int) string {
	s = Escape(strings.Join(strings.Fields(s), " "))
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}

// VerdictLead is what a failure leads with when something else failed the trial first (an
// assertion, an expected outcome) but the exactly-once verdict also found keys executed more than
// once: each violation in words with its likely cause. A verdict failure states its own in its
// message.
func VerdictLead(f *result.Failure) []string {
	if f == nil || f.Kind == result.FailVerdict {
		return nil
	}
	return f.Verdict
}

// FailureText is the plain-text explanation of a failure.
func FailureText(f *result.Failure) string {
	if f == nil {
		return ""
	}
	var b strings.Builder
	for _, l := range VerdictLead(f) {
		fmt.Fprintf(&b, "verdict: %s\n", EscapeText(l))
	}
	fmt.Fprintf(&b, "%s: %s: %s\n", f.Pos, StepLabel(f.Step), EscapeText(f.Message))
	if f.Expression != "" {
		fmt.Fprintf(&b, "  assert: %s\n", EscapeText(f.Expression))
	}
	for _, l := range f.Explanation {
		fmt.Fprintf(&b, "    %s\n", EscapeText(l))
	}
	for _, name := range slices.Sorted(maps.Keys(f.ServiceOutput)) {
		if out := f.ServiceOutput[name]; out != "" {
			fmt.Fprintf(&b, "  service %s, last output:\n%s", name, IndentLines(EscapeText(out), "    "))
		}
	}
	return b.String()
}

// Rate is n of a total, as a percentage with both counts ("12% (1/8)"), "-" when the total is 0.
func Rate(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%% (%d/%d)", 100*float64(n)/float64(of), n, of)
}

var autoID = regexp.MustCompile(`^step([0-9]+)$`)

// StepLabel names a step: "step 3" for one without an id, "step burst" for one with. The id is
// escaped: a report merge reads it from a file that may come from anyone.
func StepLabel(id string) string {
	if m := autoID.FindStringSubmatch(id); m != nil {
		return "step " + m[1]
	}
	return "step " + Escape(id)
}
