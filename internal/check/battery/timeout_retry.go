package battery

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/result"

	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// timeoutRetry gives up on a call while the server works and retries it with the same key, as a
// framework does after a client timeout; a last retry once everything settled reads the stored
// answer. The key must have executed once.
func (b *Battery) timeoutRetry(t toolset.ToolInfo, args map[string]any) *Cell {
	timeout := b.giveUpOf(t.Name)
	first := scenariogen.Step{ID: "first", CallTool: t.Name, Args: args, Timeout: timeout.String(), Expect: "any"}
	retry := scenariogen.Step{ID: "retry", RetryOf: "first", Expect: "any",
		Retry: &scenariogen.Retry{Attempts: 5, On: []string{"info", "fail"}, Backoff: b.backoffOf(t.Name, timeout).String()}}
	// The retry goes right after the timed-out call, before the snapshots read after it.
	steps := insertAt(b.Snap.WithState(first, scenariogen.Step{ID: "again", RetryOf: "first", Expect: "any"}), "first", true, retry)
	steps = append(steps, b.Snap.WholeAsserts(b.OneCall)...)
	s := b.NewPlan(t, TimeoutRetry, "a retry after a client timeout does not execute again", steps...)
	s.Comment = fmt.Sprintf("The client gives up after %s while the server works, then retries with the same key (backing off on timeouts and refusals); a last retry once everything settled must get the same stored answer.", timeout)
	s.Executions = b.once(t)
	c := b.retry(TimeoutRetry, t, s, "first", b.noEvidence())
	if s.Last == nil || c.Status == matrix.Fail {
		return c
	}
	if c.Status == matrix.Warn {
		// A refused retry is a deviation only if the tool works with a fresh key.
		b.inconclusiveControl(c, t, args, "the retry after a client timeout")
		return c
	}
	tr := explain.Trial(s.Last)
	if names, lines := b.Snap.GrewMore(tr, b.OneCall); len(names) > 0 {
		c.Status, c.Evidence = matrix.Fail, matrix.Evidences{state(names)}
		c.Reason = "the call given up on and its retry both executed: " + strings.Join(lines, "; ")
		c.Details = details(s.Last, tr)
		return c
	}
	f := explain.Calls(tr, "first")
	if len(f) > 0 && f[0].Outcome != outcome.Info {
		c.Status = matrix.Inconclusive
		c.Reason = c.answeredFirst(f[0], timeout) + "; " + c.Reason
		return c
	}
	rs := explain.Calls(tr, "retry")
	conflict := false
	for _, r := range rs {
		conflict = conflict || r.Conflict
	}
	if c.Status == matrix.Pass && !conflict && len(f) > 0 && len(rs) > 0 {
		if d, late := b.lateForFlight(f[0], rs[len(rs)-1]); late {
			c.Status, c.again = matrix.Inconclusive, timeout
			c.Reason = fmt.Sprintf("the retry was answered without executing again, but it was sent %s after the call given up on, past half the shortest execution (%s): that call may have finished at the server before the retry came, so this trial tested a replay, not a call in flight", d.Round(time.Millisecond), b.fresh.Round(time.Millisecond))
			c.Details = details(s.Last, tr)
			return c
		}
	}
	if c.Status == matrix.Pass && b.contentDedup {
		// The retries of the tool answered like second executions: the saved scenario's may too.
		stateDecides(s.Spec, "retry", "again")
	}
	if c.Status == matrix.Pass && len(rs) > 0 && !rs[len(rs)-1].Replayed && !conflict && !t.Natural && !b.contentDedup {
		// The retry's answer is not marked as a replay: the call given up on either never ran
		// and the retry executed, or it ran and the retry got its answer unmarked (a lock held
		// by middleware that answers the stored result). Two executions would have been ✗
		// above. Only evidence that counts executions can say there was one, and only the
		// retry's own timing can say which one it was.
		moved, _ := b.Snap.Compare(tr)
		counted := countedOnce(moved, s)
		if counted != "" {
			if d, ok := b.answeredFromFlight(rs[len(rs)-1]); ok {
				if len(moved) > 0 {
					c.Evidence = matrix.Evidences{state(moved)}
				}
				c.Reason = fmt.Sprintf("%s, and the retry was answered %s after it was sent, well within the shortest execution (%s): it got the answer of the call given up on, unmarked", counted, d.Round(time.Millisecond), b.fresh.Round(time.Millisecond))
				return c
			}
		}
		c.Status, s.NeedsEvidence = matrix.Inconclusive, true
		c.Reason = fmt.Sprintf("the retry's answer is not marked as a replay, and no evidence counts executions: declare check.tools.%s.effects, a sink, or a check.snapshot read-only call to judge it", t.Name)
		if counted != "" {
			c.Reason = "the retry's answer is not marked as a replay and " + counted + ": " + neverRan
			c.again, c.unproven = timeout, true
		} else if s.Effects != "" || s.SinksAsserted {
			c.again = timeout
		}
		c.Details = details(s.Last, tr)
	}
	return c
}

// countedOnce says what showed one execution in a trial that ran its effects, sinks and state
// reads: "" when none of them counts executions.
func countedOnce(moved []string, s *rig.Plan) string {
	switch {
	case s.Effects != "" && len(s.EffectsLines) == 0:
		return "the declared effects count one execution"
	case s.SinksAsserted && len(s.SinkNames) == 0:
		return "the sinks heard one execution"
	case len(moved) > 0:
		return strings.Join(moved, ", ") + " changed as one call does"
	}
	return ""
}

// answeredFromFlight reports whether a retry was answered within three quarters of the shortest
// execution of the tool measured before the in-flight trials, counted from when it was sent: it
// cannot have executed itself, so it got the answer of an execution already under way, the call
// given up on's. A busy machine only makes answers later, so it never proves what did not
// happen; it proves something only when the retry went out well into the first call's
// execution, which is why a trial that could not tell is followed by one that gives up later.
func (b *Battery) answeredFromFlight(r result.Call) (time.Duration, bool) {
	if b.fresh <= 0 || r.Sent.IsZero() || r.Outcome != outcome.OK {
		return 0, false
	}
	d := r.Start.Add(r.Duration).Sub(r.Sent)
	return d, d < b.fresh*3/4
}
