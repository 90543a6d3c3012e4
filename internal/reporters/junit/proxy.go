package junit

import (
	"io"
	"strings"

	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
)

// WriteProxy writes the proxy's verdict on the agent: one testsuite, a testcase per check;
// findings that are not violations go to system-out. When nothing was judged every check is
// skipped, not passed; a failed session is one more testcase in error: "tool-server" when the
// tool server failed the agent, "agent-session" when the agent's session never got going. The
// verdict has no durations: the report has no time attributes.
func WriteProxy(w io.Writer, v agentverdict.Verdict) error {
	s := JUnitTestSuite{Name: "idemtest proxy"}
	if v.Error != "" {
		first, _, _ := strings.Cut(v.Error, "\n")
		s.Errors++
		name := "tool-server"
		if v.Stopped != "" {
			name = "agent-session"
		}
		s.Cases = append(s.Cases, JUnitTestCase{Name: name, Classname: "idemtest.proxy",
			Error: &JUnitMessage{Message: clean(first), Text: clean(v.Error)}})
	}
	for _, c := range v.Checked {
		tc := JUnitTestCase{Name: string(c), Classname: "idemtest.proxy"}
		if why := v.Nothing(); why != "" {
			tc.Skipped = &JUnitMessage{Message: "nothing judged: " + why}
			s.Skipped++
		}
		// Keys and arguments in the messages are the agent's bytes.
		var fails, notes []string
		for _, f := range v.Findings {
			if f.Check != c {
				continue
			}
			if f.Violation {
				fails = append(fails, clean(f.Message))
			} else {
				notes = append(notes, clean(f.Message))
			}
		}
		if len(fails) > 0 {
			tc.Failure = &JUnitMessage{Message: fails[0], Text: strings.Join(fails, "\n")}
			s.Failures++
		}
		tc.SystemOut = strings.Join(notes, "\n")
		s.Cases = append(s.Cases, tc)
	}
	s.Tests = len(s.Cases)
	root := JUnitTestSuites{Name: "idemtest proxy"}
	root.add(s)
	return encode(w, root)
}
