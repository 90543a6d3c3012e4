package reporters

import (
	"fmt"
	"io"
	"strings"

	"github.com/idemtest/idemtest/internal/runner"
)

// GitHub writes a workflow-command annotation for each failure, on the scenario line that failed.
func GitHub(w io.Writer, rep *runner.Report) {
	for _, r := range rep.Scenarios {
		f := r.Failure
		if f == nil {
			continue
		}
		msg := f.Message
		if f.Expression != "" {
			msg += "\n" + f.Expression
		}
		for _, l := range f.Explanation {
			msg += "\n  " + l
		}
		if t := r.FailedTrial; t != nil {
			msg += fmt.Sprintf("\ntrial %d, session %s", t.Index, Escape(t.Session))
		}
		fmt.Fprintf(w, "::error file=%s,line=%d,col=%d,title=%s::%s\n",
			escapeProperty(f.Pos.File), f.Pos.Line, f.Pos.Col, escapeProperty("idemtest: "+Escape(r.Scenario.Name)), escapeData(EscapeText(msg)))
	}
}

func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
