package jsonvalue

import (
	"reflect"
	"testing"
)

func TestWithoutLeavesTheAnswerAlone(t *testing.T) {
	a := map[string]any{"requestId": "r1", "meta": map[string]any{"at": 1.0, "by": "x"}}
	got := Without(a, []string{"requestId", "meta.at", "missing.path"})
	if !reflect.DeepEqual(got, map[string]any{"meta": map[string]any{"by": "x"}}) {
		t.Errorf("without: %v", got)
	}
	if _, ok := a["requestId"]; !ok || len(a["meta"].(map[string]any)) != 2 {
		t.Errorf("the original changed: %v", a)
	}
}

func TestDifferBounds(t *testing.T) {
	a, b := map[string]any{}, map[string]any{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		a[k], b[k] = k, k+"'"
	}
	if got := Differ(a, b); len(got) != maxDiffer+1 || got[maxDiffer] != "…" {
		t.Errorf("differ: %v", got)
	}
	if got := Differ("x", "y"); !reflect.DeepEqual(got, []string{"(the whole answer)"}) {
		t.Errorf("differ on scalars: %v", got)
	}
}

func TestLookupReadsDifferPaths(t *testing.T) {
	v := map[string]any{"refunds": []any{map[string]any{"id": "r1"}}, "n": 2.0}
	for _, tc := range []struct {
		name, path string
		want       any
	}{
		{"whole", "(the whole answer)", v},
		{"empty", "", v},
		{"field", "n", 2.0},
		{"into a list", "refunds.0.id", "r1"},
		{"past the list", "refunds.1.id", nil},
		{"not a number", "refunds.x", nil},
		{"missing", "nope.deeper", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Lookup(v, tc.path); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Lookup(%q) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
	// Every path Differ reports can be read back from both values.
	a, b := map[string]any{"x": []any{1.0, 2.0}}, map[string]any{"x": []any{1.0, 3.0}}
	for _, p := range Differ(a, b) {
		if reflect.DeepEqual(Lookup(a, p), Lookup(b, p)) {
			t.Errorf("Differ reported %q, but both values read the same there", p)
		}
	}
}
