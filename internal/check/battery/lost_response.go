package battery

import (
	"github.com/idemtest/idemtest/internal/toolset"
)

// lostResponse: the server completes a call but its answer is lost; the retry with the same key
// must get the stored answer and not execute again.
func (b *Battery) lostResponse(t toolset.ToolInfo, args map[string]any) *Cell {
	lost := call(t, "lost", args)
	lost.LoseResponse, lost.Expect = true, "any"
	s := b.NewPlan(t, LostResponse, "a retry after a lost response does not execute again",
		b.Snap.WithState(lost, afterCompletion("lost"))...)
	s.Comment = "The server completes the call but its answer is lost; the retry with the same key must not execute again."
	s.Executions = b.once(t)
	return b.retry(LostResponse, t, s, "lost", b.noEvidence())
}
