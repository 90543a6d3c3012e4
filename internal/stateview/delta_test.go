package stateview

import (
	"encoding/json"
	"testing"
)

// TestDeltaIgnoresAsTheVerdict: compare.ignore leaves a path out of the state delta as it does
// out of the verdict: stats.count is that nested counter only (not a count at any depth), and
// items.n is the n of every item of the list.
func TestDeltaIgnoresAsTheVerdict(t *testing.T) {
	var before, after any
	json.Unmarshal([]byte(`{"count":1,"stats":{"count":1},"items":[{"n":1}],"notes":[]}`), &before)
	json.Unmarshal([]byte(`{"count":2,"stats":{"count":5},"items":[{"n":9}],"notes":[1]}`), &after)
	for _, tc := range []struct {
		ignore []string
		want   string
	}{
		{nil, "len(list.notes) +1, list.count +1, list.items.0.n +8, list.stats.count +4"},
		{[]string{"stats.count"}, "len(list.notes) +1, list.count +1, list.items.0.n +8"},
		{[]string{"count"}, "len(list.notes) +1, list.items.0.n +8, list.stats.count +4"},
		{[]string{"items.n"}, "len(list.notes) +1, list.count +1, list.stats.count +4"},
		{[]string{"items.0.n", "stats.count", "count"}, "len(list.notes) +1"},
	} {
		d := Delta{}
		diffDelta(before, after, "list", tc.ignore, d)
		if got := d.String(); got != tc.want {
			t.Errorf("ignore %q: delta %s, want %s", tc.ignore, got, tc.want)
		}
	}
}
