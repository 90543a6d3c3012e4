package battery

import (
	"fmt"
	"strings"

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
	if f := explain.Calls(tr, "first"); len(f) > 0 && f[0].Outcome != outcome.Info {
		c.Status = matrix.Inconclusive
		c.Reason = c.answeredFirst(f[0], timeout) + "; " + c.Reason
		return c
	}
	rs := explain.Calls(tr, "retry")
	conflict := false
	for _, r := range rs {
		conflict = conflict || r.Conflict
	}
	if c.Status == matrix.Pass && b.contentDedup {
		// The retries of the tool answered like second executions: the saved scenario's may too.
		stateDecides(s.Spec, "retry", "again")
	}
	if c.Status == matrix.Pass && len(rs) > 0 && !rs[len(rs)-1].Replayed && !conflict && !t.Natural && !b.contentDedup {
		// The retry executed: the call given up on either never ran or ran as well. Two
		// executions would have been ✗ above; one means the retry met nothing in flight, which
		// proves nothing, and only the sinks or the effects can still show two. Where some
		// evidence counts executions, another trial may land; where none does, it cannot tell
		// more.
		c.Status, s.NeedsEvidence = matrix.Inconclusive, true
		c.Reason = "the retry was executed, not replayed: the call given up on either never reached the server or executed as well, and only state, sinks or effects can tell which"
		moved, _ := b.Snap.Compare(tr)
		if len(moved) > 0 {
			c.Reason = "the retry was executed, not replayed, and " + strings.Join(moved, ", ") + " changed as one call does: " + neverRan
		}
		if len(moved) > 0 || s.Effects != "" || s.SinksAsserted {
			c.again = timeout
		}
		c.Details = details(s.Last, tr)
	}
	return c
}
