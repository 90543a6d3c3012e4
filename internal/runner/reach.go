package runner

import (
	"fmt"

	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
)

// unreached is the error of a trial none of whose calls reached a server: each failed before
// its request was written (a refused or failed connection), so the trial says nothing about the
// tool, whatever its steps expected; nil when a call reached one, or none was made. Without it a
// server that is not running is an ordinary failure (or, with expect: any, a pass) counting
// 0 duplicate executions.
func unreached(sc *scenario.Scenario, t *result.Trial) *result.Failure {
	if len(t.Calls) == 0 {
		return nil
	}
	for _, c := range t.Calls {
		if c.Outcome != outcome.Fail || c.Status != 0 || !c.Sent.IsZero() || !c.Answered.IsZero() {
			return nil
		}
	}
	first := t.Calls[0]
	f := &result.Failure{Kind: result.FailError, Step: first.Step}
	for _, s := range sc.Steps {
		if s.ID == first.Step {
			f.Pos = s.Pos
			break
		}
	}
	f.Message = fmt.Sprintf("no call reached the server (%d made; the first: %s): is the server running, and listening at the address the endpoint %s names?", len(t.Calls), first.Error, first.Endpoint)
	return f
}
