// Package jsonvalue is the one home of decoded JSON values (map[string]any, []any, scalars):
// what a dotted path means, walking, lookup, leaving paths out (compare.ignore), the canonical
// form answers are compared in, where two values differ, and how one changed into another.
//
// A dotted path is read from the root of the value: "a.b" is field b of field a, never a b
// deeper down. Where a path meets a list, a segment of decimal digits addresses that element
// ("items.0.n") and any other segment applies to every element ("items.n" is the n of each
// item). So every path Differ reports is a path Without and Lookup accept, and a bare name
// ("count") is a field of the top object only. The empty path is the whole value.
//
//	v = jsonvalue.Without(answer, ignore)         // compare.ignore left out
//	if jsonvalue.Canonical(a) != jsonvalue.Canonical(b) { at := jsonvalue.Differ(a, b) }
//	d := jsonvalue.Delta(before, after)           // len(items) +1, stats.count +2
//
// It imports only the standard library.
package jsonvalue
