package stateview

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
)

// A state view that did not change can only overrule answers that carry nothing new: a server
// that deduplicates by content answers a retry with "nothing created" ([] or an error), while a
// server that executes again answers with a value it just made up (a new refund id). Such a
// value is positive evidence of another execution, which a read model that lists accounts
// rather than refunds cannot disprove.

// Fresh is a value an answer introduced: where it is and what it is.
type Fresh struct {
	step, path, value string
}

// String shows a fresh value as a cell names it: "refundId re_2 (retry)".
func (f Fresh) String() string {
	return fmt.Sprintf("%s %s (%s)", f.path, f.value, f.step)
}

// Minted finds the first id-like string that an ok answer of the steps carries and that no
// earlier answer, argument or key of those steps did (in the order of the trial's calls). The
// first answer mints its values freely; ok is false when no later answer mints one.
func (s Snapshots) Minted(t *result.Trial, steps ...string) (f Fresh, ok bool) {
	return s.mintedBy(t, func(c result.Call) bool { return slices.Contains(steps, c.Step) })
}

// MintedKey is Minted over every call of the trial that carried the key of step's first call
// (a retry and whatever else retried it), whatever their step.
func (s Snapshots) MintedKey(t *result.Trial, step string) (Fresh, bool) {
	c, ok := first(t, step)
	if !ok || c.Key == "" {
		return Fresh{}, false
	}
	key := c.Key
	return s.mintedBy(t, func(c result.Call) bool { return c.Key == key })
}

func (s Snapshots) mintedBy(t *result.Trial, in func(result.Call) bool) (f Fresh, ok bool) {
	if t == nil {
		return Fresh{}, false
	}
	seen := map[string]bool{}
	answered := false
	for _, c := range t.Calls {
		if !in(c) {
			continue
		}
		seen[c.Key] = true
		strs(c.Args, func(_, s string) { seen[s] = true })
		if c.Outcome != outcome.OK && c.Discarded != outcome.OK {
			continue
		}
		v := s.view(c.Result)
		if answered && !ok {
			strs(v, func(path, s string) {
				if !ok && !seen[s] && idLike(s) {
					f, ok = Fresh{step: stepName(c), path: path, value: s}, true
				}
			})
		}
		strs(v, func(_, s string) { seen[s] = true })
		answered = true
	}
	return f, ok
}

func stepName(c result.Call) string {
	if c.Copy > 0 {
		return fmt.Sprintf("%s copy %d", c.Step, c.Copy)
	}
	return c.Step
}

// strs calls fn with every string in a decoded JSON value and its dotted path, in a stable
// order.
func strs(v any, fn func(path, s string)) {
	jsonvalue.Walk(v, func(path string, leaf any) {
		if s, ok := leaf.(string); ok {
			fn(path, s)
		}
	})
}

// idLike reports whether a string looks like a value a server mints for one operation: one
// word of at least six characters with a digit in it (re_4f2a91, a UUID, 100234), not a time.
func idLike(s string) bool {
	if len(s) < 6 || len(s) > 200 || strings.IndexFunc(s, unicode.IsSpace) >= 0 || strings.IndexFunc(s, unicode.IsDigit) < 0 {
		return false
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateTime, time.DateOnly, time.TimeOnly} {
		if _, err := time.Parse(layout, s); err == nil {
			return false
		}
	}
	return true
}
