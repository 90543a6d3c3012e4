package sweep

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/outcome"
	runresult "github.com/idemtest/idemtest/internal/result"
)

// copiesApart judges a duplicate run's copies from their own timing: they raced only when every
// copy was sent before the first answer came back (an in-progress conflict aside: it is itself
// proof that another copy was in flight). missed says why the copies did not overlap, so that
// the run judged nothing about races ("" when they did); note says what the copies did.
func copiesApart(copies []runresult.Call) (missed, note string) {
	cs := slices.Clone(copies)
	slices.SortStableFunc(cs, func(a, b runresult.Call) int { return a.Sent.Compare(b.Sent) })
	var lastSent, firstAnswer time.Time
	first, conflicts := -1, 0
	for i, c := range cs {
		if c.Sent.IsZero() {
			return fmt.Sprintf("copy %d of %d has no send time, so nothing shows that the copies overlapped", c.Copy, len(cs)), ""
		}
		if c.Sent.After(lastSent) {
			lastSent = c.Sent
		}
		if inProgress(c) {
			conflicts++
			continue
		}
		if !c.Answered.IsZero() && (firstAnswer.IsZero() || c.Answered.Before(firstAnswer)) {
			firstAnswer, first = c.Answered, i
		}
	}
	if len(cs) < 2 {
		return "only one copy was sent", ""
	}
	spread := lastSent.Sub(cs[0].Sent)
	if firstAnswer.IsZero() || lastSent.Before(firstAnswer) {
		note = fmt.Sprintf("the %d copies overlapped: all were sent within %s, before the first answer", len(cs), roundDur(spread))
		if conflicts > 0 {
			note += fmt.Sprintf(", %d answered in progress", conflicts)
		}
		return "", note
	}
	f := cs[first]
	return apart + fmt.Sprintf("copy %d was answered %s after it was sent, %s before the last copy was sent, so the server never had both at once", f.Copy, roundDur(f.Answered.Sub(f.Sent)), roundDur(lastSent.Sub(firstAnswer))), ""
}

// inProgress reports whether a call was answered that a call with its key is in progress, one
// classifier for every transport (endpoint.Conflict): a conflict whose answer does not say
// something else, or any refusal whose answer says so (a 425 or 429 with code
// "idempotency_key_in_progress"). An HTTP 409 is a conflict whatever its body says; one whose
// body says "duplicate request" refuses a key that completed, which proves nothing was in flight
// (the MCP tool error with those words is no conflict either), so a 409 proves it only when its
// body says so or says nothing.
func inProgress(c runresult.Call) bool {
	if c.Conflict && (c.Status != http.StatusConflict || c.Result == nil) {
		return true
	}
	if !c.Conflict && c.Outcome != outcome.Fail {
		return false
	}
	text, _ := c.Result.(string)
	return endpoint.Conflict(c.Result, text, nil)
}

// apart begins the reason of a duplicate run whose copies did not overlap.
const apart = "the copies did not overlap: "

// roundDur shows a duration to a precision that fits it: microseconds below a millisecond.
func roundDur(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(100 * time.Microsecond)
}
