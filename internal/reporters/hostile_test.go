package reporters_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/reporters/github"
	"github.com/idemtest/idemtest/internal/reporters/reporterstest"
	"github.com/idemtest/idemtest/internal/reporters/terminal"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
)

// TestReportsEscapeServerText feeds every reporter a report whose server-controlled strings
// (keys built from results, tool names, errors, service output) carry terminal escapes, bidi
// overrides and a forged workflow command: none reaches the output raw.
func TestReportsEscapeServerText(t *testing.T) {
	hostile := "re\x1b]0;pwned\x07\u202eevil\n::error file=x.yaml,line=1::forged"
	rep := reporterstest.SampleReport()
	for _, r := range rep.Scenarios {
		for _, tr := range []*result.Trial{r.FailedTrial, r.Trial1} {
			if tr == nil {
				continue
			}
			for i := range tr.Calls {
				tr.Calls[i].Key, tr.Calls[i].Tool, tr.Calls[i].Error = hostile, hostile, hostile
			}
		}
		if r.Failure != nil {
			r.Failure.Message = hostile
			r.Failure.Explanation = append(r.Failure.Explanation, hostile)
			r.Failure.ServiceOutput = map[string]string{"svc": hostile}
		}
	}
	var term, gh, verbose bytes.Buffer
	terminal.Write(&term, rep, terminal.Options{Verbose: true})
	github.Annotate(&gh, rep, "")
	p := terminal.NewProgress(&verbose, 1, false, true, false)
	for _, c := range rep.Scenarios[1].FailedTrial.Calls {
		p.Event(runner.Event{Kind: "call", Scenario: &scenario.Scenario{Name: hostile}, Trial: 1, Call: &c})
	}
	for name, out := range map[string]string{"terminal": term.String(), "github": gh.String(), "verbose": verbose.String()} {
		if strings.ContainsAny(out, "\x1b\x07\u202e") {
			t.Errorf("%s output holds a raw control or bidi character:\n%q", name, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "::") && !strings.HasPrefix(l, "::error file=scenarios/") && !strings.HasPrefix(l, "::warning file=scenarios/") {
				t.Errorf("%s output has a forged workflow command line: %q", name, l)
			}
		}
	}
}
