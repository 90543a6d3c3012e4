package stateview

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/result"
)

// Compare compares the snapshots of a retry check: moved lists the tools whose answer the first
// call changed (they are evidence), changed those of them the retry changed again.
func (s Snapshots) Compare(t *result.Trial) (moved, changed []string) {
	for i, tool := range s.Tools {
		id := ids(i)
		r0, ok0 := snapshot(t, id[0])
		r1, ok1 := snapshot(t, id[1])
		r2, ok2 := snapshot(t, id[2])
		if !ok0 || !ok1 || !ok2 {
			continue
		}
		v0, v1, v2 := s.view(r0), s.view(r1), s.view(r2)
		if jsonvalue.Equal(v0, v1) {
			continue
		}
		moved = append(moved, tool)
		if !jsonvalue.Equal(v1, v2) {
			changed = append(changed, tool)
		}
	}
	return moved, changed
}

// Same reports the snapshot tools that the first call changed, and whether the second call left
// every one of them as the first left it (false when the first changed nothing visible).
func (s Snapshots) Same(t *result.Trial) (moved []string, same bool) {
	moved, changed := s.Compare(t)
	return moved, len(moved) > 0 && len(changed) == 0
}

// ChangedAt lists the snapshot tools whose answer differs between the reads at position from and
// from+1 (0: before the first call, 1: after it, 2: after the second); unread lists those of
// which a read is missing or did not answer.
func (s Snapshots) ChangedAt(t *result.Trial, from int) (changed, unread []string) {
	for i, tool := range s.Tools {
		id := ids(i)
		x, ok0 := snapshot(t, id[from])
		y, ok1 := snapshot(t, id[from+1])
		switch {
		case !ok0 || !ok1:
			unread = append(unread, tool)
		case !jsonvalue.Equal(s.view(x), s.view(y)):
			changed = append(changed, tool)
		}
	}
	return changed, unread
}

// Details shows what the changed snapshot tools answered after the first call and after the
// retry.
func (s Snapshots) Details(t *result.Trial, changed []string) []string {
	var out []string
	for i, tool := range s.Tools {
		if !slices.Contains(changed, tool) {
			continue
		}
		id := ids(i)
		r1, ok1 := first(t, id[1])
		r2, ok2 := first(t, id[2])
		if !ok1 || !ok2 {
			continue
		}
		var at []string
		for _, p := range jsonvalue.Differ(s.view(r1.Result), s.view(r2.Result)) {
			a, aok := jsonvalue.Lookup(r1.Result, p).([]any)
			z, zok := jsonvalue.Lookup(r2.Result, p).([]any)
			if aok && zok {
				p += fmt.Sprintf(" (%d → %d items)", len(a), len(z))
			}
			at = append(at, p)
		}
		out = append(out, fmt.Sprintf("%s after the first call differs from %[1]s after the retry at: %s", tool, strings.Join(at, ", ")),
			fmt.Sprintf("  after the retry: %s", assert.Show(r2.Result)))
	}
	return out
}
