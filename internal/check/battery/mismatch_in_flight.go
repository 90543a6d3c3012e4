package battery

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/check/synth"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// mismatchInFlight gives up on a call while the server works and sends the same key with
// another payload at once: it must be refused (409 or the profile's mismatch status), never
// executed nor replayed. A last retry of the first call, once everything settled, tells whether
// both payloads executed.
func (b *Battery) mismatchInFlight(t toolset.ToolInfo, args map[string]any) *Cell {
	if t.Natural {
		return b.keyless(MismatchInFlight)
	}
	otherArgs, field, ok := synth.Vary(args)
	if !ok {
		return &Cell{Check: MismatchInFlight, Status: matrix.Skip, Reason: "no argument to vary"}
	}
	timeout := b.giveUpOf(t.Name)
	first := scenariogen.Step{ID: "first", CallTool: t.Name, Args: args, Timeout: timeout.String(), Expect: "any"}
	other := scenariogen.Step{ID: "other", CallTool: t.Name, Args: otherArgs, Key: "{{ first.key }}", Expect: "any"}
	// Whether the retry executes again is replay's business; here only what the key holds.
	again := scenariogen.Step{ID: "again", RetryOf: "first", Expect: "any", Verdict: "off",
		Retry: &scenariogen.Retry{Attempts: 5, On: []string{"info", "fail"}, Backoff: b.backoffOf(t.Name, timeout).String()}}
	steps := insertAt(b.Snap.WithState(first, again), "first", true, other)
	// The other payload may be answered only when the first call never reached the server
	// (dropped when the client gave up, or overtaken): then the key holds the other payload and
	// the first call's retry must be refused. Both answered is both payloads under one key.
	steps = append(append(steps, b.Snap.WholeAsserts(b.OneCall)...), scenariogen.Step{Assert: "!other.ok || !again.ok"})
	s := b.NewPlan(t, MismatchInFlight, "the same key with another payload while the first call is in flight is rejected", steps...)
	s.Comment = fmt.Sprintf("The client gives up on a call after %s while the server works, and at once sends the same key with another %s: it must be refused, neither executed nor replayed; a last retry of the first call reads what the key holds. Where the first call never reached the server the other payload may execute, and the retry of the first must then be refused.", timeout, field)
	s.Executions = 1
	j, done := b.judge(s, "first", "other")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		if o := explain.Calls(explain.Trial(res), "other"); c.Status == matrix.Fail && len(o) > 0 && o[0].Outcome == outcome.OK {
			c.Reason = "another payload under a key in flight was answered: " + c.Reason
		}
		return c
	}
	f, ag := explain.Calls(tr, "first"), explain.Calls(tr, "again")
	last := result.Call{}
	if len(ag) > 0 {
		last = ag[len(ag)-1]
	}
	names, lines := b.Snap.GrewMore(tr, b.OneCall)
	c.Evidence = byAnswers()
	switch {
	case len(names) > 0:
		c.Status, c.Evidence = matrix.Fail, matrix.Evidences{state(names)}
		c.Reason = grewWhy(r) + ": " + strings.Join(lines, "; ")
	case len(f) > 0 && f[0].Outcome != outcome.Info:
		c.Status = matrix.Inconclusive
		c.Reason = c.answeredFirst(f[0], timeout) + ": it was not in flight; payload-mismatch covers a finished call"
	case r.Outcome == outcome.OK && last.Outcome == outcome.OK && !jsonvalue.Equal(last.Result, r.Result):
		c.Status = matrix.Fail
		c.Reason = "another payload under a key in flight executed" + explain.StatusNote(r) + ", and the retry of the first call got another answer: both payloads executed under one key"
	case r.Outcome == outcome.OK && r.Replayed:
		c.Status = matrix.Fail
		c.Reason = "another payload under a key in flight got a replay"
	case r.Outcome == outcome.OK:
		// Another trial may have the other payload meet the first call in flight.
		c.Status, c.again = matrix.Inconclusive, timeout
		c.Reason = "another payload under a key in flight was answered" + explain.StatusNote(r) + ", and the first call's retry then " + string(last.Outcome) + explain.StatusNote(last) + ": the second payload may have reached the server first"
	case r.Outcome == outcome.Fail && (r.Status == 409 || r.Conflict):
		c.Status, c.Evidence, c.Reason = matrix.Pass, byStatus(), "another payload under a key in flight: rejected as in progress"+explain.StatusNote(r)
	default:
		b.rejected(c, r, b.prof.Mismatch, "another payload under a key in flight")
		b.inconclusiveControl(c, t, otherArgs, "another payload under a key in flight")
	}
	if c.Status == matrix.Pass && !r.Conflict && r.Status != 409 && len(f) > 0 {
		if d, late := b.lateForFlight(f[0], r); late {
			c.Status, c.again = matrix.Inconclusive, timeout
			c.Reason = fmt.Sprintf("another payload under the key was refused%s, but it was sent %s after the call given up on, past half the shortest execution (%s): that call may have finished at the server first, so this trial tested a finished call (payload-mismatch's case), not one in flight", explain.StatusNote(r), d.Round(time.Millisecond), b.fresh.Round(time.Millisecond))
		}
	}
	if c.Status != matrix.Pass {
		c.Details = append(lines, details(res, tr)...)
	}
	return c
}

// grewWhy says what a state that grew as more than one call does shows, from what the other
// payload got: both payloads executed only if the other was answered as an execution; if it
// was refused, the first payload executed more than once.
func grewWhy(other result.Call) string {
	switch {
	case other.Outcome == outcome.OK && !other.Replayed:
		return "both payloads executed under one key"
	case other.Outcome == outcome.Fail:
		return "the first payload executed more than once under one key, while another payload was refused" + explain.StatusNote(other)
	}
	return "more than one execution under one key"
}
