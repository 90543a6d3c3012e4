package stateview

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenariogen"
)

// Delta is how a call changed the state, by path: the change in length of each list and in
// value of each integer. Strings, booleans and the items themselves are left out: a value unique
// per trial or a timestamp would make two calls' changes differ when their effects do not.
type Delta map[string]float64

// Change is what changed in the snapshot tools' answers of trial t from before the first call to
// after it (AroundOne's reads); ok is false when a read is missing.
func (s Snapshots) Change(t *result.Trial) (d Delta, ok bool) {
	return s.between(t, 0, 1)
}

// between is what changed from the reads at position from to those at position to.
func (s Snapshots) between(t *result.Trial, from, to int) (Delta, bool) {
	d := Delta{}
	for i, tool := range s.Tools {
		id := ids(i)
		x, ok0 := snapshot(t, id[from])
		y, ok1 := snapshot(t, id[to])
		if !ok0 || !ok1 {
			return nil, false
		}
		diffDelta(x, y, tool, s.Ignore, d)
	}
	return d, true
}

// diffDelta adds how snapshot tool's answer changed from x to y to out, by "tool.path" and
// "len(tool.path)", the endpoint's compare.ignore left out as every comparison leaves it out.
func diffDelta(x, y any, tool string, ignore []string, out Delta) {
	for _, c := range jsonvalue.Delta(jsonvalue.Without(x, ignore), jsonvalue.Without(y, ignore)) {
		p := jsonvalue.Join(tool, c.Path)
		if c.Len {
			p = "len(" + p + ")"
		}
		out[p] = c.By
	}
}

// String shows a delta in a stable order: "len(read_graph.entities) +1".
func (d Delta) String() string {
	parts := make([]string, 0, len(d))
	for _, k := range d.paths() {
		parts = append(parts, fmt.Sprintf("%s %+g", k, d[k]))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

func (d Delta) paths() []string {
	out := make([]string, 0, len(d))
	for k := range d {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// times compares a burst's change with one call's: the most calls' worth of change the burst
// made on a path one call changes (1 when it changed as one call does, 0 when nothing shows).
func times(burst, one Delta) (n float64, at string) {
	for _, k := range one.paths() {
		if one[k] == 0 {
			continue
		}
		if r := burst[k] / one[k]; r > n {
			n, at = r, k
		}
	}
	return n, at
}

// Burst compares a concurrent round's change of the state with one call's: n is 1 when the
// burst changed it as one call does, above 1 when as several calls do (why says where), 0 when
// the state says nothing.
func (s Snapshots) Burst(t *result.Trial, one Delta) (n float64, why string) {
	if len(one) == 0 || t == nil {
		return 0, ""
	}
	d, ok := s.Change(t)
	if !ok {
		return 0, ""
	}
	n, at := times(d, one)
	switch {
	case n >= 1.5:
		return n, fmt.Sprintf("one burst changed %s by %+g, as %g calls do (one call: %+g): the copies executed %g times", at, d[at], n, one[at], n)
	case n > 0:
		return 1, ""
	}
	return 0, ""
}

// BurstAsserts are the state checks of a saved concurrent scenario: each list or counter one
// call changes changes no more in a burst (paths with names expr cannot spell are left out).
func (s Snapshots) BurstAsserts(one Delta) []scenariogen.Step {
	var out []scenariogen.Step
	for _, p := range one.paths() {
		inner, list := strings.CutPrefix(p, "len(")
		inner = strings.TrimSuffix(inner, ")")
		tool, rest, _ := strings.Cut(inner, ".")
		i := slices.Index(s.Tools, tool)
		if i < 0 || !identPath.MatchString(rest) {
			continue
		}
		id := ids(i)
		b0, b1 := id[0], id[1]
		d := one[p]
		expr := fmt.Sprintf("%s.result.%s - %s.result.%s", b1, rest, b0, rest)
		if list {
			expr = fmt.Sprintf("len(%s.result.%s ?? []) - len(%s.result.%s ?? [])", b1, rest, b0, rest)
		}
		op := "<="
		if d < 0 {
			op = ">="
		}
		out = append(out, scenariogen.Step{Assert: fmt.Sprintf("%s %s %g", expr, op, d)})
	}
	return out
}

// identPath matches a dotted path expr can spell after "result.".
var identPath = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// GrewMore compares how the state changed over a whole check (from before its first call to
// after its last) with how one call changes it (one, measured before the battery): a check
// whose first answer is never read (the client gave up on it) shows a second execution only
// there. It returns the snapshot tool that changed as several calls do, and why.
func (s Snapshots) GrewMore(t *result.Trial, one Delta) (names, lines []string) {
	if len(one) == 0 || t == nil {
		return nil, nil
	}
	d, ok := s.between(t, 0, 2)
	if !ok {
		return nil, nil
	}
	n, at := times(d, one)
	if n < 1.5 {
		return nil, nil
	}
	tool, _, _ := strings.Cut(strings.TrimPrefix(at, "len("), ".")
	return []string{tool}, []string{fmt.Sprintf("%s changed by %+g, as %g calls do (one call: %+g)", at, d[at], n, one[at])}
}

// WholeAsserts are the state assertions of a saved check whose first answer is never read: each
// list or counter one call changes changes no more from before the first call to after the last
// (BurstAsserts, measured to the last read instead of the one after the first call).
func (s Snapshots) WholeAsserts(one Delta) []scenariogen.Step {
	out := s.BurstAsserts(one)
	for i := range out {
		for j := range s.Tools {
			id := ids(j)
			out[i].Assert = strings.ReplaceAll(out[i].Assert, id[1]+".", id[2]+".")
		}
	}
	return out
}
