package battery

import (
	"fmt"
	"slices"
	"time"

	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// maxExpiryWait is the longest key_ttl the expiry check waits out in a full battery: a longer one
// (keys kept for a day are common) would hold every CI run that long, so it waits only when the
// user asks for that check by name.
const maxExpiryWait = time.Minute

// expiry (opt-in) retries after the declared key lifetime: the key must still be remembered.
func (b *Battery) expiry(t toolset.ToolInfo, args map[string]any) *Cell {
	if b.Config.KeyTTL <= 0 {
		return &Cell{Check: Expiry, Status: matrix.Skip, Reason: "opt-in: declare how long keys must live with check: {key_ttl: DURATION}"}
	}
	if b.Config.KeyTTL > maxExpiryWait && !slices.Contains(b.Opts.Only, Expiry) {
		return &Cell{Check: Expiry, Status: matrix.Skip, Reason: fmt.Sprintf("key_ttl %s is longer than check waits unasked (%s): run it alone with --only expiry", b.Config.KeyTTL, maxExpiryWait)}
	}
	if t.Natural {
		return b.keyless(Expiry)
	}
	ttl := b.Config.KeyTTL
	first := scenariogen.Step{ID: "first", CallTool: t.Name, Args: args}
	steps := b.Snap.WithState(first, afterCompletion("first"))
	steps = insertAt(steps, "retry", false, scenariogen.Step{Sleep: ttl.String()})
	s := b.NewPlan(t, Expiry, "a retry after the declared key lifetime ("+ttl.String()+") still gets the stored answer", steps...)
	s.Comment = "A call, then its retry with the same key after check.key_ttl: the key must still be remembered, so the retry must not execute again."
	s.Executions = 1
	c := b.retry(Expiry, t, s, "first", "")
	switch c.Status {
	case matrix.Fail:
		c.Reason = "after " + ttl.String() + " the key was not remembered: " + c.Reason
	case matrix.Pass, matrix.Warn, matrix.Inconclusive:
		c.Reason = "after " + ttl.String() + ": " + c.Reason
	}
	return c
}
