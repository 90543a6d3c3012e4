package junit

import (
	"strings"

	"io"

	"github.com/idemtest/idemtest/internal/audit"
)

// WriteAudit writes the audit of production traces: a testsuite per tool with a testcase per
// kind of finding, and a suite "rates" for the thresholds. A violation is a failure; a finding
// that is not one (a keyless call, a shared key, an expiry collision) goes to system-out. The
// audit has no durations: the report has no time attributes.
func WriteAudit(w io.Writer, rep *audit.Report) error {
	root := JUnitTestSuites{Name: "idemtest audit"}
	byTool := map[string][]audit.Finding{}
	for _, f := range rep.Findings {
		byTool[f.Tool] = append(byTool[f.Tool], f)
	}
	perTool := []audit.Kind{audit.DoubleExecution, audit.FreshKeyRetry, audit.KeylessMutating, audit.KeySharedSessions, audit.KeySharedArgs, audit.ExpiryCollision}
	for _, t := range rep.Tools {
		s := JUnitTestSuite{Name: t.Tool}
		for _, k := range perTool {
			s.addAudit(t.Tool, k, byTool[t.Tool])
		}
		root.add(s)
	}
	rates := JUnitTestSuite{Name: "rates"}
	for _, k := range []audit.Kind{audit.HitRate, audit.ConflictRate} {
		rates.addAudit("", k, byTool[""])
	}
	root.add(rates)
	return encode(w, root)
}

func (s *JUnitTestSuite) addAudit(tool string, k audit.Kind, fs []audit.Finding) {
	tc := JUnitTestCase{Name: string(k), Classname: "idemtest.audit." + tool}
	if tool == "" {
		tc.Classname = "idemtest.audit"
	}
	var fails, notes []string
	for _, f := range fs {
		if f.Kind != k {
			continue
		}
		// Keys and tool names in the messages come from the traces.
		line := clean(f.Message + refs(f.Calls))
		if f.Violation {
			fails = append(fails, line)
		} else {
			notes = append(notes, line)
		}
	}
	if len(fails) > 0 {
		tc.Failure = &JUnitMessage{Message: clean(strings.SplitN(fails[0], "\n", 2)[0]), Text: strings.Join(fails, "\n")}
		s.Failures++
	}
	tc.SystemOut = strings.Join(notes, "\n")
	s.Cases = append(s.Cases, tc)
	s.Tests++
}

// refs lists a finding's calls by trace and span id.
func refs(rs []audit.Ref) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString("\n  ")
		if r.TraceID != "" {
			b.WriteString("trace " + r.TraceID + " span " + r.SpanID + " ")
		}
		b.WriteString("at " + r.Where)
	}
	return b.String()
}
