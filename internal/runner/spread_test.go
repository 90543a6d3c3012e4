package runner

import (
	"reflect"
	"testing"

	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/scenario"
)

// TestSpreadPick: round-robin sends each later send of a key to the instance after the one it
// last went to, whatever other keys went in between; same sends everything to the first; random
// is the same again for the same session.
func TestSpreadPick(t *testing.T) {
	type send struct {
		key string
		n   int
	}
	for _, tc := range []struct {
		name   string
		spread dispatch.Spread
		size   int
		sends  []send
		want   [][]int
	}{
		{name: "a retry goes to the other instance", size: 2,
			sends: []send{{"a", 1}, {"a", 1}}, want: [][]int{{0}, {1}}},
		{name: "a retry after another key still moves on", size: 2,
			sends: []send{{"a", 1}, {"b", 1}, {"a", 1}, {"b", 1}}, want: [][]int{{0}, {1}, {1}, {0}}},
		{name: "retry attempts go round", size: 3,
			sends: []send{{"a", 1}, {"a", 1}, {"a", 1}, {"a", 1}}, want: [][]int{{0}, {1}, {2}, {0}}},
		{name: "fan-out copies go round, and a retry after them moves on", size: 2,
			sends: []send{{"a", 4}, {"a", 1}}, want: [][]int{{0, 1, 0, 1}, {0}}},
		{name: "calls without a key take turns", size: 2,
			sends: []send{{"", 1}, {"", 1}, {"", 1}}, want: [][]int{{0}, {1}, {0}}},
		{name: "same", spread: dispatch.SpreadSame, size: 3,
			sends: []send{{"a", 1}, {"a", 2}, {"b", 1}}, want: [][]int{{0}, {0, 0}, {0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := &spreader{session: "s"}
			def := &scenario.Endpoint{Name: "e", Spread: tc.spread}
			var got [][]int
			for _, s := range tc.sends {
				got = append(got, sp.pick(def, s.key, tc.size, s.n))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("instances %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("random is seeded by the session", func(t *testing.T) {
		def := &scenario.Endpoint{Name: "e", Spread: dispatch.SpreadRandom}
		draw := func(session string) []int {
			sp := &spreader{session: session}
			return sp.pick(def, "k", 4, 32)
		}
		a, b, c := draw("one"), draw("one"), draw("two")
		if !reflect.DeepEqual(a, b) {
			t.Errorf("one session drew %v, then %v", a, b)
		}
		if reflect.DeepEqual(a, c) {
			t.Errorf("two sessions drew the same %v", a)
		}
		seen := map[int]bool{}
		for _, i := range a {
			if i < 0 || i >= 4 {
				t.Fatalf("instance %d of 4", i)
			}
			seen[i] = true
		}
		if len(seen) < 2 {
			t.Errorf("32 draws over 4 instances hit only %v", seen)
		}
	})
}
