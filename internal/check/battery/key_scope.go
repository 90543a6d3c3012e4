package battery

import (
	"fmt"
	"slices"
	"sort"

	"github.com/idemtest/idemtest/internal/check/spec"
	"github.com/idemtest/idemtest/internal/check/state"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
)

// partner is the mutating tool key-scope sends the borrowed key to: another tool whose plain call
// works with its arguments (--tool does not limit it; --skip-tool and check.tools.NAME.skip do).
func (b *Battery) partner(t runner.ToolInfo) (runner.ToolInfo, map[string]any, bool) {
	var cands []runner.ToolInfo
	rank := map[string]int{}
	earlier := true
	for _, u := range b.x.tools {
		if u.Name == t.Name {
			earlier = false
			continue
		}
		if !u.Mutating || slices.Contains(b.opts.SkipTools, u.Name) {
			continue
		}
		// Tools whose rows are done first, so that a tool that works once (a move) is not used
		// up before its own row; then one idempotent by nature, which calling changes least.
		switch {
		case earlier && (len(b.opts.Tools) == 0 || slices.Contains(b.opts.Tools, u.Name)) && !u.Natural:
			rank[u.Name] = 0
		case u.Natural:
			rank[u.Name] = 1
		default:
			rank[u.Name] = 2
		}
		cands = append(cands, u)
	}
	sort.SliceStable(cands, func(i, j int) bool { return rank[cands[i].Name] < rank[cands[j].Name] })
	for _, u := range cands {
		a, why := b.args(u)
		if why != "" {
			continue
		}
		// A tool that fails with its arguments anyway would make every refusal look like one of
		// the key: it is tried once, plainly, and left out if it fails.
		works, known := b.x.works[u.Name]
		if !known {
			works, _ = b.control(u, a)
			if b.x.works == nil {
				b.x.works = map[string]bool{}
			}
			b.x.works[u.Name] = works
		}
		if works {
			return u, a, true
		}
	}
	return runner.ToolInfo{}, nil, false
}

// keyScope sends the key of a call to another tool: that tool must execute its own call, and
// the first tool's retry must still get its own answer.
func (b *Battery) keyScope(t runner.ToolInfo, args map[string]any) *Cell {
	if t.Natural {
		return b.keyless(KeyScope)
	}
	u, uargs, ok := b.partner(t)
	if !ok {
		return &Cell{Check: KeyScope, Status: Skip, Reason: "no other mutating tool that works with its arguments to send the same key to (--skip-tool and check.tools.NAME.skip leave tools out)"}
	}
	other := spec.Step{ID: "other", CallTool: u.Name, Args: uargs, Key: "{{ first.key }}", Expect: "any"}
	s := b.spec(t, KeyScope, "one key on "+t.Name+" and "+u.Name+": each executes its own call",
		spec.Step{ID: "first", CallTool: t.Name, Args: args}, other,
		// Whether the retry executes again is replay's business; here only whose answer it gets.
		spec.Step{ID: "again", RetryOf: "first", Expect: "any", Verdict: "off"},
		spec.Step{Assert: "!other.ok || (!other.replayed && toJSON(other.result) != toJSON(first.result))"},
		spec.Step{Assert: "!again.ok || toJSON(again.result) != toJSON(other.result) || toJSON(again.result) == toJSON(first.result)"})
	s.Comment = fmt.Sprintf("Keys are scoped per tool: the key of the %s call sent with a %s call is another operation, and the retry of the first still gets its own answer.", t.Name, u.Name)
	// Two tools execute: the sinks and effects of one tool do not count them.
	s.executions = -1
	j, done := b.judge(s, "first", "other")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		if c.Status == Fail && res != nil {
			if a, o := calls(trialOf(res), "again"), calls(trialOf(res), "other"); len(a) > 0 && len(o) > 0 && a[0].Outcome == scenario.OK && state.Equal(a[0].Result, o[0].Result) {
				c.Reason = "the retry of " + t.Name + " got the answer of " + u.Name + ": keys are shared between tools"
			}
		}
		return c
	}
	c.Evidence = byAnswers
	first := calls(tr, "first")
	again := calls(tr, "again")
	switch {
	case r.Outcome == scenario.OK && (r.Replayed || (len(first) > 0 && state.Equal(r.Result, first[0].Result))):
		c.Status = Fail
		c.Reason = u.Name + " with the key of the " + t.Name + " call got " + t.Name + "'s answer: keys are not scoped per tool, so " + u.Name + " never ran"
	case len(again) > 0 && len(first) > 0 && again[0].Outcome == scenario.OK && state.Equal(again[0].Result, r.Result) && !state.Equal(again[0].Result, first[0].Result):
		c.Status = Fail
		c.Reason = "the retry of " + t.Name + " got the answer of " + u.Name + ": keys are shared between tools"
	case r.Outcome == scenario.Info:
		c.Status, c.Reason = Inconclusive, u.Name+"'s outcome is unknown"+statusNote(r)
	case r.Outcome == scenario.Fail:
		if ok, why := b.control(u, uargs); !ok {
			c.Status = Inconclusive
			c.Reason = u.Name + " refused the key of the " + t.Name + " call" + statusNote(r) + ", but it refuses a call with a fresh key too" + why + ": give it working arguments under check: {tools: {" + u.Name + ": {args: …}}}"
			break
		}
		c.Status, c.Evidence = Warn, byStatus
		c.Reason = u.Name + " refused the key of the " + t.Name + " call" + statusNote(r) + ": keys are not scoped per tool (safe, but the agent's call cannot run)"
	default:
		c.Status, c.Reason = Pass, u.Name+" with the same key executed its own call"
	}
	if c.Status != Pass {
		c.Details = details(res, tr)
	}
	return c
}
