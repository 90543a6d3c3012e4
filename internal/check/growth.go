package check

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
)

// growth is how many items each list of a snapshot answer gained from a to b, by dotted path
// (lists that did not change length are left out). Lists are not entered: their items are
// records whose contents differ per execution (ids, times), their number does not.
func growth(a, b any) map[string]int {
	out := map[string]int{}
	var walk func(path string, a, b any)
	walk = func(path string, a, b any) {
		switch y := b.(type) {
		case map[string]any:
			x, _ := a.(map[string]any)
			for k, v := range y {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, x[k], v)
			}
		case []any:
			x, _ := a.([]any)
			if d := len(y) - len(x); d != 0 {
				if path == "" {
					path = "(the whole answer)"
				}
				out[path] = d
			}
		}
	}
	walk("", a, b)
	return out
}

// snapshotAnswer is the ok answer of a snapshot step, if there is one.
func snapshotAnswer(t *runner.Trial, step string) (any, bool) {
	rs := calls(t, step)
	if len(rs) == 0 || rs[0].Outcome != scenario.OK {
		return nil, false
	}
	return rs[0].Result, true
}

// noteOneCall remembers, from a replay check's trial, how one execution changes each snapshot.
func (x *extras) noteOneCall(b *battery, s *Spec, t *runner.Trial) {
	if s.Check != Replay || t == nil || x.oneCall[s.Tool] != nil {
		return
	}
	if f := calls(t, "first"); len(f) == 0 || f[0].Outcome != scenario.OK {
		return
	}
	per := map[string]map[string]int{}
	for i, tool := range b.snapshots {
		b0, b1, _ := stateIDs(i)
		a, ok1 := snapshotAnswer(t, b0)
		z, ok2 := snapshotAnswer(t, b1)
		if ok1 && ok2 {
			if g := growth(a, z); len(g) > 0 {
				per[tool] = g
			}
		}
	}
	if len(per) == 0 {
		return
	}
	if x.oneCall == nil {
		x.oneCall = map[string]map[string]map[string]int{}
	}
	x.oneCall[s.Tool] = per
}

// grewMore compares how the snapshots grew over a whole check (before the first call to after
// the last) with what one execution of the tool adds: more items than one call adds means more
// than one execution. It returns the tools that grew more and an explanation per tool.
func (b *battery) grewMore(tool string, t *runner.Trial) (names, lines []string) {
	one := b.x.oneCall[tool]
	for i, snap := range b.snapshots {
		want := one[snap]
		if len(want) == 0 {
			continue
		}
		b0, _, b2 := stateIDs(i)
		a, ok1 := snapshotAnswer(t, b0)
		z, ok2 := snapshotAnswer(t, b2)
		if !ok1 || !ok2 {
			continue
		}
		got := growth(a, z)
		var at []string
		paths := make([]string, 0, len(want))
		for p := range want {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			if w := want[p]; w > 0 && got[p] > w {
				at = append(at, fmt.Sprintf("%s gained %d items, one call adds %d", p, got[p], w))
			}
		}
		if len(at) > 0 {
			names = append(names, snap)
			lines = append(lines, fmt.Sprintf("%s: %s", snap, strings.Join(at, "; ")))
		}
	}
	return names, lines
}

// growthAsserts are assertions that each snapshot gained no more items over a check than one
// call adds, as measured by the tool's replay check (none before it ran).
func (b *battery) growthAsserts(tool string) []SpecStep {
	one := b.x.oneCall[tool]
	var out []SpecStep
	for i, snap := range b.snapshots {
		paths := make([]string, 0, len(one[snap]))
		for p, n := range one[snap] {
			if n > 0 {
				paths = append(paths, p)
			}
		}
		sort.Strings(paths)
		b0, _, b2 := stateIDs(i)
		for _, p := range paths {
			out = append(out, SpecStep{Assert: fmt.Sprintf("len(%s) - len(%s) <= %d", member(b2+".result", p), member(b0+".result", p), one[snap][p])})
		}
	}
	return out
}

// member is the expression that reads a dotted path under root.
func member(root, path string) string {
	if path == "(the whole answer)" {
		return root
	}
	var sb strings.Builder
	sb.WriteString(root)
	for _, k := range strings.Split(path, ".") {
		if identifier.MatchString(k) {
			sb.WriteString("." + k)
		} else {
			fmt.Fprintf(&sb, "[%q]", k)
		}
	}
	return sb.String()
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
