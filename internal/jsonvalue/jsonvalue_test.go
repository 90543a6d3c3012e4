package jsonvalue

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestWithoutPaths is the one meaning of a dotted path in compare.ignore.
func TestWithoutPaths(t *testing.T) {
	const answer = `{"count":1,"stats":{"count":2,"at":"t"},"items":[{"n":1,"id":"a"},{"n":2,"id":"b"}],"grid":[[{"n":1}]]}`
	cases := []struct {
		name, path, want string
	}{
		{"a top field", "count", `{"grid":[[{"n":1}]],"items":[{"id":"a","n":1},{"id":"b","n":2}],"stats":{"at":"t","count":2}}`},
		{"a bare name is no suffix match", "at", `{"count":1,"grid":[[{"n":1}]],"items":[{"id":"a","n":1},{"id":"b","n":2}],"stats":{"at":"t","count":2}}`},
		{"a nested field", "stats.count", `{"count":1,"grid":[[{"n":1}]],"items":[{"id":"a","n":1},{"id":"b","n":2}],"stats":{"at":"t"}}`},
		{"every element of a list", "items.n", `{"count":1,"grid":[[{"n":1}]],"items":[{"id":"a"},{"id":"b"}],"stats":{"at":"t","count":2}}`},
		{"one element by index", "items.1.n", `{"count":1,"grid":[[{"n":1}]],"items":[{"id":"a","n":1},{"id":"b"}],"stats":{"at":"t","count":2}}`},
		{"a whole element", "items.0", `{"count":1,"grid":[[{"n":1}]],"items":[{"id":"b","n":2}],"stats":{"at":"t","count":2}}`},
		{"an index past the end", "items.7.n", `{"count":1,"grid":[[{"n":1}]],"items":[{"id":"a","n":1},{"id":"b","n":2}],"stats":{"at":"t","count":2}}`},
		{"lists in lists", "grid.n", `{"count":1,"grid":[[{}]],"items":[{"id":"a","n":1},{"id":"b","n":2}],"stats":{"at":"t","count":2}}`},
		{"a missing path", "nope.x", `{"count":1,"grid":[[{"n":1}]],"items":[{"id":"a","n":1},{"id":"b","n":2}],"stats":{"at":"t","count":2}}`},
		{"through a scalar", "count.x", `{"count":1,"grid":[[{"n":1}]],"items":[{"id":"a","n":1},{"id":"b","n":2}],"stats":{"at":"t","count":2}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := decode(t, answer)
			got := Canonical(Without(v, []string{c.path}))
			if got != c.want {
				t.Errorf("Without(%q)\n got %s\nwant %s", c.path, got, c.want)
			}
			if Canonical(v) != Canonical(decode(t, answer)) {
				t.Errorf("Without(%q) changed its input: %s", c.path, Canonical(v))
			}
		})
	}
}

func TestLookup(t *testing.T) {
	v := decode(t, `{"a":{"b":[{"c":1},{"c":2}]},"n":null}`)
	cases := []struct {
		path string
		want any
	}{
		{"", v},
		{"a.b.1.c", 2.0},
		{"a.b.0", map[string]any{"c": 1.0}},
		{"a.b.c", nil}, // every element names no one value
		{"a.b.2", nil},
		{"a.x", nil},
		{"n.x", nil},
	}
	for _, c := range cases {
		if got := Lookup(v, c.path); Canonical(got) != Canonical(c.want) {
			t.Errorf("Lookup(%q) = %v, want %v", c.path, got, c.want)
		}
	}
}

// TestDifferPathsAreIgnorable: a path Differ reports, given to Without, makes the two equal at
// that path, so the hint "leave it out with compare.ignore" can quote it.
func TestDifferPathsAreIgnorable(t *testing.T) {
	cases := []struct {
		a, b string
		want []string
	}{
		{`{"id":"x","at":1}`, `{"id":"x","at":2}`, []string{"at"}},
		{`{"items":[{"n":1},{"n":1}]}`, `{"items":[{"n":1},{"n":3}]}`, []string{"items.1.n"}},
		{`{"items":[1]}`, `{"items":[1,2]}`, []string{"items"}},
		{`1`, `2`, []string{Whole}},
		{`{"a":1}`, `{"a":1}`, nil},
		{`{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1}`, `{"a":2,"b":2,"c":2,"d":2,"e":2,"f":2}`, []string{"a", "b", "c", "d", "e", "…"}},
	}
	for _, c := range cases {
		a, b := decode(t, c.a), decode(t, c.b)
		got := Differ(a, b)
		if !slices.Equal(got, c.want) {
			t.Errorf("Differ(%s, %s) = %q, want %q", c.a, c.b, got, c.want)
			continue
		}
		if len(got) == 1 && got[0] != Whole && !Equal(Without(a, got), Without(b, got)) {
			t.Errorf("Without(%q) leaves %s and %s apart", got, c.a, c.b)
		}
	}
}

func TestDelta(t *testing.T) {
	before := decode(t, `{"items":[{"n":1}],"stats":{"count":2,"avg":1.5,"at":"t1"},"pairs":[{"v":1}]}`)
	after := decode(t, `{"items":[{"n":1},{"n":2}],"stats":{"count":5,"avg":2.5,"at":"t2"},"pairs":[{"v":4}],"new":[1]}`)
	want := []Change{{Path: "items", Len: true, By: 1}, {Path: "new", Len: true, By: 1}, {Path: "pairs.0.v", By: 3}, {Path: "stats.count", By: 3}}
	if got := Delta(before, after); !slices.Equal(got, want) {
		t.Errorf("Delta = %v, want %v", got, want)
	}
	// compare.ignore acts on the delta as on every comparison: a nested counter and a field of
	// every list element.
	ig := []string{"stats.count", "pairs.v"}
	want = []Change{{Path: "items", Len: true, By: 1}, {Path: "new", Len: true, By: 1}}
	if got := Delta(Without(before, ig), Without(after, ig)); !slices.Equal(got, want) {
		t.Errorf("Delta without %q = %v, want %v", ig, got, want)
	}
}

func TestWalkMapAny(t *testing.T) {
	v := decode(t, `{"b":[1,"x"],"a":{"c":null}}`)
	var got []string
	Walk(v, func(p string, l any) { got = append(got, p+"="+Canonical(l)) })
	if want := []string{"a.c=null", "b.0=1", `b.1="x"`}; !slices.Equal(got, want) {
		t.Errorf("Walk = %q, want %q", got, want)
	}
	m := Map(v, func(l any) any {
		if s, ok := l.(string); ok {
			return s + s
		}
		return l
	})
	if got, want := Canonical(m), `{"a":{"c":null},"b":[1,"xx"]}`; got != want {
		t.Errorf("Map = %s, want %s", got, want)
	}
	if Canonical(v) != `{"a":{"c":null},"b":[1,"x"]}` {
		t.Errorf("Map changed its input")
	}
	if got, want := Canonical(SortLists(decode(t, `{"a":[3,[2,1],{"b":["y","x"]}]}`))), `{"a":[3,[1,2],{"b":["x","y"]}]}`; got != want {
		t.Errorf("SortLists = %s, want %s", got, want)
	}
	if !Any(v, func(l any) bool { return l == "x" }) || Any(v, func(l any) bool { return l == "y" }) {
		t.Errorf("Any is wrong")
	}
}

// FuzzWalkCanonical: whatever JSON comes in, the canonical form decodes to an equal value, Walk
// visits exactly the leaves, each found again by Lookup at its path, and leaving out every leaf
// path leaves no leaf behind.
func FuzzWalkCanonical(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `1`, `{"a":[{"b":1},{"b":[2,3]}],"c":"<&>"}`, `[[1],[2,[3]]]`, `{"0":{"1":2}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		c := Canonical(v)
		var back any
		if err := json.Unmarshal([]byte(c), &back); err != nil {
			t.Fatalf("canonical form %s does not decode: %v", c, err)
		}
		if Canonical(back) != c || !Equal(v, back) {
			t.Fatalf("canonical form is not stable: %s then %s", c, Canonical(back))
		}
		if d := Differ(v, back); d != nil {
			t.Fatalf("Differ of equal values = %q", d)
		}
		if d := Diff(v, back); d != nil || len(Delta(v, back)) > 0 {
			t.Fatalf("Diff of equal values = %v, Delta %v", d, Delta(v, back))
		}
		if s := SortLists(v); !Equal(SortLists(s), s) || Canonical(v) != c {
			t.Fatalf("SortLists is not stable or changed its input: %s", Canonical(s))
		}
		if !addressable(v) {
			return
		}
		var paths []string
		Walk(v, func(p string, l any) {
			if _, ok := l.(map[string]any); ok {
				t.Fatalf("Walk gave an object at %q", p)
			}
			if !Equal(Lookup(v, p), l) {
				t.Fatalf("Lookup(%q) = %v, Walk saw %v", p, Lookup(v, p), l)
			}
			paths = append(paths, p)
		})
		if len(paths) == 1 && paths[0] == "" {
			return
		}
		slices.Reverse(paths) // later list elements first, so indexes stay put
		left := 0
		Walk(Without(v, paths), func(string, any) { left++ })
		if left > len(paths) {
			t.Fatalf("Without every leaf path left %d leaves of %d", left, len(paths))
		}
		if Canonical(v) != c {
			t.Fatalf("Without changed its input")
		}
	})
}

// addressable reports whether every field name in v can be a path segment: not empty, no dot.
func addressable(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "" || strings.Contains(k, ".") || !addressable(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !addressable(e) {
				return false
			}
		}
	}
	return true
}
