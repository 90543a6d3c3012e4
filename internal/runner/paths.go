package runner

import (
	"fmt"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/scenario"
)

// pathSeen is what the trials saw of one answer path an assertion reads.
type pathSeen struct {
	step   *scenario.Step
	path   assert.ResultPath
	found  bool
	absent *assert.Absence
}

// pathTracker follows, over a scenario's trials, the answer paths its assertions read, so that
// a path no answer had (a typo: refundID for refundId) is reported once: it reads as nil, and
// nil == nil makes a comparison true whatever the server did.
type pathTracker struct {
	order []string
	seen  map[string]*pathSeen
}

// read records what the answers in env say of the paths step's assertion reads.
func (t *pathTracker) read(step *scenario.Step, env map[string]any) {
	if step.Assert == nil {
		return
	}
	if t.seen == nil {
		t.seen = map[string]*pathSeen{}
	}
	for _, rp := range step.Assert.ResultPaths() {
		s := t.seen[rp.String()]
		if s == nil {
			s = &pathSeen{step: step, path: rp}
			t.seen[rp.String()] = s
			t.order = append(t.order, rp.String())
		}
		found, absent, known := rp.Lookup(env)
		switch {
		case !known:
		case found:
			s.found = true
		case s.absent == nil:
			s.absent = &absent
		}
	}
}

// warnings are the paths missing from every answer they were read from, one line each.
func (t *pathTracker) warnings() []string {
	var out []string
	for _, k := range t.order {
		s := t.seen[k]
		if s.found || s.absent == nil {
			continue
		}
		msg := fmt.Sprintf("%s: %s is missing from every answer it was read from", s.step.Pos, k)
		if h := s.absent.Hint(); h != "" {
			msg += "; " + h
		}
		out = append(out, msg+" (a missing field reads as nil, so comparing it proves nothing)")
	}
	return out
}
