package jsonvalue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// bothKeys are the field names of a and b, in order.
func bothKeys(a, b map[string]any) []string {
	keys := make(map[string]any, len(a)+len(b))
	for k := range a {
		keys[k] = nil
	}
	for k := range b {
		keys[k] = nil
	}
	return SortedKeys(keys)
}

// Join appends segment k to dotted path at.
func Join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

// Split cuts a dotted path into its segments (none for the whole value).
func Split(path string) []string {
	if path == "" {
		return nil
	}
	return strings.Split(path, ".")
}

// index reads a segment that addresses a list element.
func index(seg string) (int, bool) {
	if seg == "" || seg[0] < '0' || seg[0] > '9' {
		return 0, false
	}
	i, err := strconv.Atoi(seg)
	return i, err == nil
}

// SortedKeys are an object's field names in order.
func SortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Walk calls fn with every leaf of v (a value that is not an object nor a list, nil included)
// and its dotted path, objects in field order and lists in element order.
func Walk(v any, fn func(path string, leaf any)) {
	walk(v, "", fn)
}

func walk(v any, at string, fn func(string, any)) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range SortedKeys(x) {
			walk(x[k], Join(at, k), fn)
		}
	case []any:
		for i, e := range x {
			walk(e, Join(at, strconv.Itoa(i)), fn)
		}
	default:
		fn(at, v)
	}
}

// Any reports whether pred holds for some leaf of v.
func Any(v any, pred func(leaf any) bool) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if Any(e, pred) {
				return true
			}
		}
		return false
	case []any:
		for _, e := range x {
			if Any(e, pred) {
				return true
			}
		}
		return false
	}
	return pred(v)
}

// Map returns a copy of v with every leaf replaced by f(leaf); objects and lists are new, v is
// left as it was.
func Map(v any, f func(leaf any) any) any {
	out, _ := MapErr(v, func(l any) (any, error) { return f(l), nil })
	return out
}

// MapErr is Map with a leaf function that can fail: the first error stops it, prefixed with
// the names of the fields it was under ("amount: …", "meta: at: …").
func MapErr(v any, f func(leaf any) (any, error)) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range SortedKeys(x) {
			e, err := MapErr(x[k], f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = e
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = MapErr(e, f); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return f(v)
}

// MapPath is Map with each leaf's path as segments: a field name (string) or a list index
// (int), objects in field order. The path slice is f's only for the call: copy it to keep it.
func MapPath(v any, f func(path []any, leaf any) any) any {
	return mapPath(v, nil, f)
}

func mapPath(v any, path []any, f func([]any, any) any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range SortedKeys(x) {
			out[k] = mapPath(x[k], append(path, k), f)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = mapPath(e, append(path, i), f)
		}
		return out
	}
	return f(path, v)
}

// SortLists returns a copy of v with the elements of every list in the order of their
// canonical form (inner lists first), so lists compare as multisets: equal whatever order the
// server listed their items in.
func SortLists(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = SortLists(e)
		}
		return out
	case []any:
		type item struct {
			key string
			v   any
		}
		items := make([]item, len(x))
		for i, e := range x {
			e = SortLists(e)
			items[i] = item{Canonical(e), e}
		}
		sort.SliceStable(items, func(i, j int) bool { return items[i].key < items[j].key })
		out := make([]any, len(x))
		for i, it := range items {
			out[i] = it.v
		}
		return out
	}
	return v
}

// Canonical is the JSON text of v with object fields sorted and no HTML escaping: the form
// values are compared in. A value JSON cannot encode is spelled with fmt.
func Canonical(v any) string {
	s, err := canonical(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return s
}

func canonical(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// Equal reports whether a and b are the same JSON (false when either cannot be encoded).
func Equal(a, b any) bool {
	x, err1 := canonical(a)
	y, err2 := canonical(b)
	return err1 == nil && err2 == nil && x == y
}

// Lookup reads a dotted path (Whole too) from v: nil when the path is not there. At a list a segment must
// be an index: a path that runs through every element names no one value.
func Lookup(v any, path string) any {
	if path == Whole {
		return v
	}
	for _, k := range Split(path) {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, ok := index(k)
			if !ok || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// Without returns v with the dotted paths left out, v itself untouched (what changes is
// copied). It is what compare.ignore does to every comparison. Empty paths are skipped.
func Without(v any, paths []string) any {
	for _, p := range paths {
		if p != "" {
			v = drop(v, Split(p))
		}
	}
	return v
}

func drop(v any, path []string) any {
	switch x := v.(type) {
	case map[string]any:
		e, ok := x[path[0]]
		if !ok {
			return v
		}
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = val
		}
		if len(path) == 1 {
			delete(out, path[0])
		} else {
			out[path[0]] = drop(e, path[1:])
		}
		return out
	case []any:
		out := make([]any, len(x))
		copy(out, x)
		if i, ok := index(path[0]); ok {
			if i >= len(x) {
				return v
			}
			if len(path) == 1 {
				return append(out[:i:i], out[i+1:]...)
			}
			out[i] = drop(x[i], path[1:])
			return out
		}
		for i, e := range x {
			out[i] = drop(e, path)
		}
		return out
	}
	return v
}

// Whole is what Differ reports when two values differ as a whole (not objects nor lists of one
// length).
const Whole = "(the whole answer)"

// maxDiffer bounds the paths Differ reports.
const maxDiffer = 5

// Differ lists the dotted paths at which a and b differ, in field order, at most five and
// then "…"; Whole when they differ at the root. Lists of equal length are compared element by
// element, others whole.
func Differ(a, b any) []string {
	var out []string
	differ(a, b, "", &out)
	if len(out) > maxDiffer {
		out = append(out[:maxDiffer], "…")
	}
	return out
}

func differ(a, b any, at string, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		for _, k := range bothKeys(am, bm) {
			differ(am[k], bm[k], Join(at, k), out)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			differ(al[i], bl[i], Join(at, strconv.Itoa(i)), out)
		}
		return
	}
	if Canonical(a) != Canonical(b) {
		if at == "" {
			at = Whole
		}
		*out = append(*out, at)
	}
}

// Change is one difference Delta measures: a list's length (Len) or a whole number's value at
// Path changed By.
type Change struct {
	Path string
	Len  bool
	By   float64
}

// Delta is how before changed into after, as counts: the change in length of each list and in
// value of each whole number, by path. Strings, booleans, fractions and the items themselves
// are left out (an id or a timestamp makes no count). Lists of one length are compared element
// by element (the same items in place); a list where before had nothing counts from zero.
// Leave compare.ignore out first: Delta(Without(before, ig), Without(after, ig)).
func Delta(before, after any) []Change {
	var out []Change
	delta(before, after, "", &out)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func delta(x, y any, at string, out *[]Change) {
	switch a := x.(type) {
	case map[string]any:
		z, _ := y.(map[string]any)
		for _, k := range bothKeys(a, z) {
			delta(a[k], z[k], Join(at, k), out)
		}
	case []any:
		z, ok := y.([]any)
		switch {
		case !ok:
		case len(z) != len(a):
			*out = append(*out, Change{Path: at, Len: true, By: float64(len(z) - len(a))})
		default:
			for i := range a {
				delta(a[i], z[i], Join(at, strconv.Itoa(i)), out)
			}
		}
	case float64:
		if z, ok := y.(float64); ok && z != a && a == math.Trunc(a) && z == math.Trunc(z) {
			*out = append(*out, Change{Path: at, By: z - a})
		}
	case nil:
		if z, ok := y.([]any); ok && len(z) > 0 {
			*out = append(*out, Change{Path: at, Len: true, By: float64(len(z))})
		}
	}
}

// Diff is how after differs from before, as a value: objects by key, arrays as the items added ("+") and
// removed ("-") whatever their order, any other change as the new value ("="). nil: unchanged.
func Diff(before, after any) any {
	if Canonical(before) == Canonical(after) {
		return nil
	}
	bm, bok := before.(map[string]any)
	am, aok := after.(map[string]any)
	if bok && aok {
		out := map[string]any{}
		for _, k := range bothKeys(bm, am) {
			if d := Diff(bm[k], am[k]); d != nil {
				out[k] = d
			}
		}
		return out
	}
	bl, bok := before.([]any)
	al, aok := after.([]any)
	if bok && aok {
		added, removed := MultisetDiff(bl, al)
		out := map[string]any{}
		if len(added) > 0 {
			out["+"] = added
		}
		if len(removed) > 0 {
			out["-"] = removed
		}
		return out
	}
	return map[string]any{"=": after}
}

// MultisetDiff returns the items of after that before lacks and those of before that after
// lacks, counting repeats.
func MultisetDiff(before, after []any) (added, removed []any) {
	return missing(after, before), missing(before, after)
}

// missing are the items of xs that ys lacks, counting repeats.
func missing(xs, ys []any) []any {
	left := map[string]int{}
	for _, v := range ys {
		left[Canonical(v)]++
	}
	var out []any
	for _, v := range xs {
		c := Canonical(v)
		if left[c] > 0 {
			left[c]--
			continue
		}
		out = append(out, v)
	}
	return out
}
