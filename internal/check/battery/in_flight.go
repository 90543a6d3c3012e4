package battery

import (
	"fmt"
	"time"

	"github.com/idemtest/idemtest/internal/endpoints"
	"github.com/idemtest/idemtest/internal/result"
)

// inFlightTrials bounds the trials of a check whose first call must still be in flight at the
// server when the next call arrives (timeout-retry, mismatch-in-flight). A trial in which it was
// not (answered before idemtest gave up, or never run because the server dropped it when the
// client gave up) judges nothing; on a busy machine the timing that missed once may land the
// next time, so the check runs another trial, and the cell is ? only when none landed.
const inFlightTrials = 3

// neverRan explains a trial whose retry executed while the evidence shows one execution.
const neverRan = "the call given up on never ran (the server dropped it when the client gave up, or it had not reached the server yet), so nothing was in flight to meet"

// giveUpOf is how long an in-flight check waits before giving up on a call of tool: half its
// shortest execution (rig.GiveUp), or, in another trial, what the last one learnt.
func (b *Battery) giveUpOf(tool string) time.Duration {
	if b.giveUp > 0 {
		return b.giveUp
	}
	return b.GiveUp(tool)
}

// answeredFirst explains a first call that was answered although idemtest was to give up on it
// after giveUp, and sets when another trial gives up: as soon when the answer took more than
// twice as long (the machine was too busy for the client to give up in time: a server that
// answered within giveUp would have been read sooner), half as soon when the server really was
// about that fast (the shortest execution was measured on a loaded machine, or the tool
// varies); no other trial at the shortest give-up, where the tool answers as fast as idemtest
// can give up.
func (c *Cell) answeredFirst(first result.Call, giveUp time.Duration) string {
	if giveUp <= time.Millisecond {
		return fmt.Sprintf("the first call was answered within %s (%s), so the client never gave up", giveUp, first.Outcome)
	}
	if first.Duration > 2*giveUp {
		c.again = giveUp
		return fmt.Sprintf("the first call was answered (%s) after %s, though idemtest was to give up on it after %s: the machine was too busy to give up in time, so the client never did", first.Outcome, first.Duration.Round(time.Millisecond), giveUp)
	}
	c.again = max(giveUp/2, time.Millisecond)
	return fmt.Sprintf("the first call was answered within %s (%s), so the client never gave up", giveUp, first.Outcome)
}

// tryInFlight runs check id until a trial had its first call in flight, at most inFlightTrials
// times: a cell whose trial missed (again is set) is decided again with the give-up it learnt.
func (b *Battery) tryInFlight(id string, t endpoints.ToolInfo, args map[string]any, c *Cell) *Cell {
	n := 1
	for ; c.again > 0 && c.Status == Inconclusive && n < inFlightTrials; n++ {
		b.giveUp = c.again
		c = b.withEffects(b.run(id, t, args))
	}
	b.giveUp = 0
	if n > 1 && c.Status == Inconclusive && c.again > 0 {
		c.Reason += fmt.Sprintf(" (%d trials, none with the first call in flight)", n)
	}
	return c
}
