package battery

import (
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/matrix"
)

// TestKeysHonoured runs replay, key-scope and distinct-keys in matrix order on one battery, as
// check does, against server shapes that honour keys and shapes that do not. A retry that
// executed again but left the state as one call does is reported as that (⚠ when only the
// answers showed the second execution; ✗ when the declared effects, which count side effects,
// did), never ✓; a ✓ from an unmarked answer equal to the first and an unchanged state is ?
// where a call with a fresh key does the same; and key-scope and distinct-keys are judged only where keys work: on a server
// that ignores them they are – "not judged", never a ✓ that could not go red.
func TestKeysHonoured(t *testing.T) {
	type want struct {
		status matrix.Status
		reason string
	}
	notJudged := want{matrix.Skip, "not judged: keys are not honoured, a same-key retry executed again (replay "}
	tests := []struct {
		name     string
		server   ledger
		evidence string
		replay   want
		keyScope want
		distinct want
	}{
		{"keys honoured, an insert", ledger{}, "",
			want{matrix.Pass, "got the stored answer"}, want{matrix.Pass, "ship with the same key executed its own call"}, want{matrix.Pass, "two keys, two executions"}},
		{"keys honoured, an update", ledger{update: true}, "",
			want{matrix.Pass, "got the stored answer"}, want{matrix.Pass, "ship with the same key executed its own call"}, want{matrix.Warn, "the second key's call left list_payments as the first call left it: one payload, one state whatever the keys (idempotent by nature, or the server deduplicates by content)"}},
		{"keys ignored, an insert", ledger{ignoreKeys: true}, "",
			want{matrix.Fail, "the retry changed list_payments again"}, notJudged, notJudged},
		{"keys ignored, an update whose answers show the second execution", ledger{ignoreKeys: true, update: true}, "",
			want{matrix.Warn, "executed twice, same state: the retry answered as a second execution, not with the first call's answer, but left list_payments as the first call left it: idempotent by nature, or the server deduplicates by content (safe); keys are not honoured"}, notJudged, notJudged},
		{"keys ignored, an update answered alike, only the state", ledger{ignoreKeys: true, update: true, bare: true}, "",
			want{matrix.Inconclusive, "the retry got an answer equal to the first call's, not marked as a replay, but a call with a fresh key and the same arguments gets an answer equal to the first and leaves list_payments as one call does, so an execution and a replay look the same here"},
			want{matrix.Inconclusive, "judged only where keys are shown to work"}, want{matrix.Inconclusive, "both answers are equal"}},
		{"keys ignored, an update the effects count twice", ledger{ignoreKeys: true, update: true, bare: true}, "both",
			want{matrix.Fail, "executed twice, same state: the declared effects counted another number of executions than 1"}, notJudged, notJudged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, tool, args := cellRun{server: tt.server, evidence: tt.evidence}.battery(t)
			for _, w := range []struct {
				id   string
				want want
			}{{Replay, tt.replay}, {KeyScope, tt.keyScope}, {DistinctKeys, tt.distinct}} {
				c := b.Cell(w.id, tool, args)
				if c.Status != w.want.status || !strings.Contains(c.Reason, w.want.reason) {
					t.Errorf("%s: got %s [%s] %q\nwant %s %q\n%s", w.id, c.Status.Symbol(), c.Evidence, c.Reason, w.want.status.Symbol(), w.want.reason, strings.Join(c.Details, "\n"))
				}
			}
		})
	}
}
