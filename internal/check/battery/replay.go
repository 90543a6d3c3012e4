package battery

import (
	"fmt"
	"strings"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// replay: a call, then its retry with the same key, which must get the stored answer and not
// execute again.
func (b *Battery) replay(t toolset.ToolInfo, args map[string]any) *Cell {
	s := b.NewPlan(t, Replay, "a sequential retry with the same key gets the stored answer",
		b.Snap.WithState(call(t, "first", args), afterCompletion("first"))...)
	s.Comment = "A call, then its retry with the same key: the retry must not execute again."
	s.Executions = b.once(t)
	return b.retry(Replay, t, s, "first", b.noEvidence())
}

// afterCompletion is the retry of a call that completed: it tries again on a refusal (a store
// that lags behind the answer may refuse once), and a refusal on every attempt is for ever.
// Every refusal counts alike, whatever its shape: an HTTP 409 and an MCP tool error saying
// "duplicate request" get as many attempts and the same cell (DESIGN §8).
func afterCompletion(of string) scenariogen.Step {
	return scenariogen.Step{ID: "retry", RetryOf: of, Expect: "any", Retry: scenariogen.AfterCompletion()}
}

// retry judges replay and lost-response (timeout-retry and expiry too): the retry of a completed
// call must be answered with the stored result, not executed again.
func (b *Battery) retry(id string, t toolset.ToolInfo, s *rig.Plan, first, natural string) *Cell {
	j, done := b.judge(s, first, "retry")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		if b.overruled(c, res, "the retry") {
			c.Details = details(res, explain.Trial(res))
			return c
		}
		if res != nil && c.Status == matrix.Fail {
			if moved, changed := b.Snap.Compare(explain.Trial(res)); len(changed) > 0 {
				c.lead(state(moved), "the retry changed "+strings.Join(changed, ", ")+" again")
				c.Details = append(b.Snap.Details(explain.Trial(res), changed), c.Details...)
			}
		}
		return c
	}
	c.Replayed, c.Evidence = res.Metrics.Replayed > 0, byAnswers()
	moved, changed := b.Snap.Compare(tr)
	byState := state(moved)
	switch {
	case len(changed) > 0:
		c.Status, c.Evidence, c.twice = matrix.Fail, matrix.Evidences{byState}, true
		c.Reason = "the retry changed the state again: " + strings.Join(changed, ", ") + " answers differently after the retry than after the first call"
	case r.Outcome == outcome.Info:
		c.Status, c.Reason = matrix.Inconclusive, "the retry's outcome is unknown"+explain.StatusNote(r)
	case r.Outcome == outcome.Fail && firstFailed(tr, first):
		c.Status, c.Evidence = matrix.Inconclusive, byStatus()
		c.Reason = "the lost call failed too (its discarded answer was an error), so the retry's refusal" + explain.StatusNote(r) + " says nothing" + b.twice(s, first)
	case r.Outcome == outcome.Fail && id != TimeoutRetry && len(explain.Calls(tr, "retry")) >= scenariogen.RefusedAttempts:
		// The first call completed: a retry refused on every attempt is refused for ever,
		// whatever the refusal's shape. timeout-retry's first call may still be working, so it
		// stays a deviation.
		c.Status, c.Evidence = b.prof.RefusedForever, byStatus()
		c.Reason = fmt.Sprintf("every retry after the first call completed was refused%s: %d attempts over %s, so the agent can never learn the outcome", explain.StatusNote(r), len(explain.Calls(tr, "retry")), scenariogen.RefusedWindow())
		if c.Status == matrix.Fail {
			c.Reason += "; the " + b.prof.Name + " profile expects the stored result"
		} else {
			c.Reason += " (safe; ✗ under the ietf and stripe profiles)"
		}
	case r.Outcome == outcome.Fail:
		c.Status, c.Evidence = matrix.Warn, byStatus()
		c.Reason = "the retry was refused" + explain.StatusNote(r) + " instead of answered with the stored result: safe, but the agent never learns the outcome"
	case t.Natural && len(moved) > 0:
		c.Status, c.Evidence = matrix.Pass, matrix.Evidences{byState}
		c.Reason = "idempotent by nature; the retry left " + strings.Join(moved, ", ") + " as the first call left it"
	case t.Natural:
		c.Status, c.Reason = matrix.Inconclusive, natural+", and no read-only tool showed its effect; the retry succeeded"
	case noID(res) && len(moved) > 0:
		c.Status, c.Evidence = matrix.Pass, matrix.Evidences{byState}
		c.Reason = "the retry left " + strings.Join(moved, ", ") + " as the first call left it (its answers carry no id)"
		stateDecidesBecause(c.Scenario, "retry", noIDComment)
		if why := b.earned(id, t, s, first, true); why != "" {
			c.Status, c.Reason = matrix.Inconclusive, "the retry left "+strings.Join(moved, ", ")+" as the first call left it, but "+why
		}
	case noID(res):
		c.Status, c.Reason = matrix.Inconclusive, noIDReason
	case c.Replayed:
		c.Status, c.Reason = matrix.Pass, "the retry got the stored answer"
		if len(moved) > 0 {
			c.Evidence = c.Evidence.Lead(byState)
			c.Reason = "the retry left " + strings.Join(moved, ", ") + " as the first call left it and got the stored answer"
		}
		if !unmarked(tr, "retry") {
			break
		}
		if why := b.earned(id, t, s, first, false); why != "" {
			c.Status, c.Reason = matrix.Inconclusive, "the retry got an answer equal to the first call's, not marked as a replay, but "+why
		}
	default:
		c.Status, c.Reason = matrix.Inconclusive, "the first answer was not seen, so the retry's cannot be compared"
	}
	if c.Status != matrix.Pass && (!t.Natural || len(changed) > 0) {
		c.Details = append(b.Snap.Details(tr, changed), details(res, tr)...)
	}
	return c
}
