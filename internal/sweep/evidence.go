package sweep

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/jsonvalue"
)

// A read is compared as the change it shows: what a read-only call answered at its place in the
// run against what the same call answered when the run began. Runs sharing a server then compare
// what each run did, not what earlier runs left behind.

// masker hides what legitimately differs per run: the run's session (in its keys), values the
// server minted in this run (ids in the answers of its mutating calls that no recorded argument
// holds) and timestamps.
type masker struct {
	session string
	minted  map[string]bool
}

// mask is v with those values replaced by markers, every list in a stable order: items added
// or removed compare as a multiset, their order is the server's.
func (m masker) mask(v any) any {
	return jsonvalue.SortLists(jsonvalue.Map(v, func(leaf any) any {
		x, ok := leaf.(string)
		switch {
		case !ok:
		case m.session != "" && strings.Contains(x, m.session):
			return "<session>"
		case m.minted[x]:
			return "<minted>"
		case isTime(x):
			return "<time>"
		}
		return leaf
	}))
}

func isTime(s string) bool {
	if len(s) < 10 || s[4] != '-' {
		return false
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateTime, time.DateOnly} {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

// read is one piece of state evidence: a read-only call before and after (or where the trace
// made it).
type read struct {
	// label names it in reports: "list_refunds (state after the run)", "call 5 list_refunds".
	label string
	// before, after are step ids; before is "" when there is no baseline.
	before, after string
}

// observed is what one read showed in one run.
type observed struct {
	ok, beforeOK bool
	value, delta any // masked
}

// compareRead decides whether run k's read shows what run 0's showed. When the baseline read
// worked in both runs, the changes since the run began are compared; else the reads themselves.
func compareRead(r read, base, got observed) (bool, []string) {
	if base.ok != got.ok {
		return false, []string{fmt.Sprintf("%s: %s in run 0, %s here", r.label, okWord(base.ok), okWord(got.ok))}
	}
	a, b, what := base.delta, got.delta, "the change"
	if r.before == "" || !base.beforeOK || !got.beforeOK {
		a, b, what = base.value, got.value, "the answer"
	}
	if jsonvalue.Canonical(a) == jsonvalue.Canonical(b) {
		return true, nil
	}
	var at, items []string
	for _, p := range jsonvalue.Differ(a, b) {
		x, xok := jsonvalue.Lookup(a, p).([]any)
		y, yok := jsonvalue.Lookup(b, p).([]any)
		if xok && yok {
			p += fmt.Sprintf(" (%d → %d items)", len(x), len(y))
			// Lists are shown by the items that differ, not whole.
			more, fewer := jsonvalue.MultisetDiff(x, y)
			for _, v := range more {
				items = append(items, "  only here:     "+show(v))
			}
			for _, v := range fewer {
				items = append(items, "  only in run 0: "+show(v))
			}
		}
		at = append(at, p)
	}
	head := fmt.Sprintf("%s: %s differs from run 0's at %s", r.label, what, strings.Join(at, ", "))
	if len(items) > 0 {
		return false, append([]string{head}, items...)
	}
	return false, []string{head, "  run 0: " + show(a), "  here:  " + show(b)}
}

func okWord(ok bool) string {
	if ok {
		return "answered"
	}
	return "not answered"
}

// maxShow bounds a value shown in a report line.
const maxShow = 400

func show(v any) string {
	s := jsonvalue.Canonical(v)
	if len(s) > maxShow {
		s = s[:maxShow] + "…"
	}
	return s
}
