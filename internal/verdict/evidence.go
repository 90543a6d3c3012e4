package verdict

import (
	"sort"
	"strings"

	"github.com/idemtest/idemtest/internal/jsonvalue"
)

// Unprovable is a key whose ok answers are equal to each other but carry nothing the server
// minted: no id, no value that tells this execution from another key's. Equal answers then
// prove nothing: a server that ignores keys and answers each execution with an echo of the
// payload gives equal answers too. The key is neither a replay nor a double execution; its
// tool has to be judged from state (a sink, a probe) instead.
type Unprovable struct {
	Key, Endpoint, Tool string
	// First is the index, in the calls judged, of the key's first call.
	First int
	// Calls counts the key's ok answers that could not be judged.
	Calls int
}

// leaves flattens a decoded answer into its scalar values by dotted path ("" for a scalar
// answer), each in canonical form; nulls are left out.
func leaves(v any, out map[string]string) {
	jsonvalue.Walk(v, func(at string, leaf any) {
		if leaf != nil {
			out[at] = jsonvalue.Canonical(leaf)
		}
	})
}

// lastName is the field name a dotted path ends in, list indexes skipped.
func lastName(path string) string {
	parts := strings.Split(path, ".")
	for i := len(parts) - 1; i >= 0; i-- {
		if p := parts[i]; p != "" && (p[0] < '0' || p[0] > '9') {
			return p
		}
	}
	return ""
}

// idLike reports whether a field's name says it holds an identifier the server assigns:
// id, refundId, refund_id, uuid, ID.
func idLike(name string) bool {
	l := strings.ToLower(name)
	return l == "id" || l == "uuid" || l == "guid" || strings.HasSuffix(name, "Id") || strings.HasSuffix(name, "ID") ||
		strings.HasSuffix(l, "_id") || strings.HasSuffix(l, "-id") || strings.HasSuffix(l, "uuid")
}

// echo reports whether an answer's value at path only repeats an argument of the call: the
// same value under the same field name, or the same string anywhere in the arguments.
func echo(path, value string, args map[string]string) bool {
	name := lastName(path)
	for p, v := range args {
		if v == value && (lastName(p) == name || strings.HasPrefix(value, `"`)) {
			return true
		}
	}
	return false
}

// evidence holds, per endpoint and tool, the first ok answer idemtest saw to each key, as
// leaves, to tell minted values from constants.
type evidence struct {
	keys    []string
	answers map[string]map[string]string // key → path → value
}

// minted reports whether answer (to key, with args) holds a value the server minted for this
// execution: not an echo of the arguments, not the same in another key's answer, and either
// named like an id or seen to differ between keys.
func (e *evidence) minted(key string, answer map[string]string, args map[string]string) bool {
	paths := make([]string, 0, len(answer))
	for p := range answer {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		v := answer[p]
		if echo(p, v, args) {
			continue
		}
		same, differs := false, false
		for _, k := range e.keys {
			if k == key {
				continue
			}
			if w, ok := e.answers[k][p]; ok {
				same = same || w == v
				differs = differs || w != v
			}
		}
		if !same && (differs || idLike(lastName(p))) {
			return true
		}
	}
	return false
}
