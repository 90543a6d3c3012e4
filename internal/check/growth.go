package check

import (
	"fmt"
	"strings"

	"github.com/idemtest/idemtest/internal/check/spec"
	"github.com/idemtest/idemtest/internal/runner"
)

// grewMore compares how the state changed over a whole check (from before its first call to
// after its last) with how one call changes it (b.oneCall, measured before the battery): a check
// whose first answer is never read (the client gave up on it) shows a second execution only
// there. It returns the snapshot tool that changed as several calls do, and why.
func (b *battery) grewMore(t *runner.Trial) (names, lines []string) {
	if len(b.oneCall) == 0 || t == nil {
		return nil, nil
	}
	d := delta{}
	for i, tool := range b.snapshots {
		b0, _, b2 := stateIDs(i)
		x, ok0 := snapshot(t, b0)
		y, ok2 := snapshot(t, b2)
		if !ok0 || !ok2 {
			return nil, nil
		}
		diffDelta(x, y, tool, b.def.Ignore, d)
	}
	n, at := times(d, b.oneCall)
	if n < 1.5 {
		return nil, nil
	}
	tool, _, _ := strings.Cut(strings.TrimPrefix(at, "len("), ".")
	return []string{tool}, []string{fmt.Sprintf("%s changed by %+g, as %g calls do (one call: %+g)", at, d[at], n, b.oneCall[at])}
}

// wholeAsserts are the state assertions of a saved check whose first answer is never read: each
// list or counter one call changes changes no more from before the first call to after the last
// (burstAsserts, measured to the last read instead of the one after the first call).
func (b *battery) wholeAsserts() []spec.Step {
	out := b.burstAsserts()
	for i := range out {
		for j := range b.snapshots {
			_, b1, b2 := stateIDs(j)
			out[i].Assert = strings.ReplaceAll(out[i].Assert, b1+".", b2+".")
		}
	}
	return out
}
