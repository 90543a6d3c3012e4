package battery

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/toolset"
)

// neverRan explains a trial whose retry was answered as an execution while the evidence shows
// one execution: it names what was not observed, the call given up on in flight at the server.
const neverRan = "nothing shows that the call given up on was in flight at the server (it may never have run, dropped when the client gave up, or the retry may have got its answer unmarked), so this trial proves nothing"

// maxGiveUps bounds the give-up points of one in-flight check (1ms … 2^15ms, past 30s).
const maxGiveUps = 16

// giveUpPoints are the times an in-flight check gives up on a call after, in the order it tries
// them: 1ms, 2ms, 4ms … up to the tool's shortest measured execution. A server's race window
// may open at any time while it works (a key check 1 ms in, a store just before the answer), so
// one point in the middle of the execution misses a window near its start that a patient
// hand-made retry finds; the points sweep the whole execution, geometrically so that a short
// window near the start is tried as often as a long one.
func giveUpPoints(execution time.Duration) []time.Duration {
	out := []time.Duration{time.Millisecond}
	for d := 2 * time.Millisecond; d < execution && len(out) < maxGiveUps; d *= 2 {
		out = append(out, d)
	}
	return out
}

// savedTrials is how many trials a saved in-flight scenario runs, after check ran n.
func savedTrials(n int) int { return min(max(n, 5), 50) }

// giveUpOf is how long an in-flight check waits before giving up on a call of tool: the point
// the current trial tries, else half its shortest execution (rig.GiveUp).
func (b *Battery) giveUpOf(tool string) time.Duration {
	if b.giveUp > 0 {
		return b.giveUp
	}
	return b.GiveUp(tool)
}

// backoffOf is the first backoff of an in-flight check's retries: long enough that five
// doubling attempts (31 backoffs) outlast the tool's execution three times over, so a correct
// server that answers 409 while the first call works is waited out, whatever the give-up.
func (b *Battery) backoffOf(tool string, giveUp time.Duration) time.Duration {
	return max(2*giveUp, b.Latency(tool)/10)
}

// answeredFirst explains a first call that was answered although idemtest was to give up on it
// after giveUp: the trial judged nothing, and another give-up point may land.
func (c *Cell) answeredFirst(first result.Call, giveUp time.Duration) string {
	c.again = giveUp
	if first.Duration > 2*giveUp {
		return fmt.Sprintf("the first call was answered (%s) after %s, though idemtest was to give up on it after %s: the machine was too busy to give up in time, so the client never did", first.Outcome, first.Duration.Round(time.Millisecond), giveUp)
	}
	return fmt.Sprintf("the first call was answered within %s (%s), so the client never gave up", giveUp, first.Outcome)
}

// lateForFlight reports whether call went out so long after first that first may have finished at
// the server before call came: half the tool's shortest execution measured before the trials, or
// more. A call answered without executing again then shows a replay of a finished call, not how
// the server treats one in flight, and cannot earn ✓; only an answer that says the first call was
// in progress (a conflict) proves it was. A busy machine delays a call's arrival as much as its
// sending, so the half is a margin, not a bound: what it gains is that a trial whose timing
// cannot tell never counts as one that could.
func (b *Battery) lateForFlight(first, call result.Call) (time.Duration, bool) {
	if b.fresh <= 0 {
		return 0, false
	}
	sent := func(c result.Call) time.Time {
		if !c.Sent.IsZero() {
			return c.Sent
		}
		return c.Start
	}
	d := sent(call).Sub(sent(first))
	return d, d >= b.fresh/2
}

// inFlight decides an in-flight check (timeout-retry, mismatch-in-flight): it runs trials at each
// give-up point in turn until one catches a second execution (✗) or the budget is spent. A trial
// whose first call was not in flight at the server (answered before the give-up, or never run)
// judges nothing; the cell is ✓ (or ⚠) when some trial had it in flight and none caught
// anything, and ? when no trial did, or when in some trial the retry executed and nothing counts
// executions (the call given up on may have run as well).
func (b *Battery) inFlight(id string, t toolset.ToolInfo, args map[string]any) *Cell {
	// The shortest execution measured before the trials: their own answers, which may be
	// unmarked replays of a call in flight, do not shorten it.
	b.fresh = b.Latency(t.Name)
	defer func() { b.giveUp, b.fresh = 0, 0 }()
	points := giveUpPoints(b.Latency(t.Name))
	deadline := time.Now().Add(b.Opts.Budget)
	var decided, last *Cell
	trials, landed, blind := 0, 0, 0
	later, longest := false, time.Duration(0)
	for i := 0; ; i++ {
		b.giveUp = points[i%len(points)]
		if later {
			// An unmarked answer proves the retry was served by the call given up on only when
			// the retry went out before that call could have finished (lateForFlight: half the
			// shortest execution) and was answered sooner than an execution of its own takes
			// (answeredFromFlight: three quarters of it, counted from when it was sent): giving
			// up at three eighths of the execution leaves an eighth of margin on both sides.
			b.giveUp = points[len(points)-1]
			if b.fresh > 0 {
				b.giveUp = max(b.fresh*3/8, time.Millisecond)
			}
		}
		longest = max(longest, b.giveUp)
		c := b.withEffects(b.run(id, t, args))
		later = c.unproven
		trials++
		if c.Scenario != nil {
			// Saved, the scenario runs several trials at this give-up point: a trial whose
			// first call the server dropped, or never received in time, judges nothing, and one
			// trial alone could pass on the server check caught.
			c.Scenario.Trials = savedTrials(trials)
		}
		switch {
		case c.Status == matrix.Fail:
			if trials > 1 {
				c.Reason = fmt.Sprintf("trial %d, giving up after %s: %s", trials, b.giveUp, c.Reason)
			}
			return c
		case c.Status == matrix.Skip:
			return c
		case c.Status == matrix.Inconclusive && c.again == 0 && decided == nil:
			// Nothing another trial could change (the first call failed, no evidence at all).
			return c
		case c.Status == matrix.Inconclusive:
			last = c
			if c.plan != nil && c.plan.NeedsEvidence && c.again == 0 {
				// The retry executed and nothing counts executions: the call given up on may
				// have run too (a race window this trial's timing hit), or never have run.
				blind++
			}
		default:
			decided = c
			landed++
		}
		if !time.Now().Before(deadline) || b.Ctx.Err() != nil {
			break
		}
	}
	span := points[0].String()
	if longest > points[0] {
		span += "–" + longest.String()
	}
	if decided != nil {
		decided.Reason += fmt.Sprintf(" (%d trials giving up after %s, %d with the first call in flight)", trials, span, landed)
		if blind > 0 {
			// The trials that met the first call in flight say nothing of these: in them both
			// calls may have executed (a lookup-then-store library does when the retry lands
			// between the two), or the first may never have run. Without a count of
			// executions that is no evidence either way, and the cell cannot be ✓.
			if decided.Status == matrix.Pass {
				decided.Status = matrix.Inconclusive
			}
			decided.Reason += fmt.Sprintf("; but in %d other trials the retry executed and nothing counts executions, so whether the call given up on ran as well is unknown: declare check.tools.%s.effects, or sinks, to judge them", blind, t.Name)
		}
		return decided
	}
	if !strings.Contains(last.Reason, "trials") {
		last.Reason += fmt.Sprintf(" (%d trials giving up after %s, none with the first call in flight)", trials, span)
	}
	return last
}
