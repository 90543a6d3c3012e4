package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/check/spec"
	"github.com/idemtest/idemtest/internal/check/state"
	"github.com/idemtest/idemtest/internal/check/synth"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
)

// The checks of keys across time, tools and errors (DESIGN §9), by stable id.
const (
	TimeoutRetry      = "timeout-retry"
	MismatchInFlight  = "mismatch-in-flight"
	KeyScope          = "key-scope"
	ErrorsNotReplayed = "errors-not-replayed"
	Expiry            = "expiry"
)

// extras is what the checks of this file need beyond one tool: the other tools (key-scope
// borrows one), where a synthesised uri points, and what was learnt about each tool.
type extras struct {
	tools  []runner.ToolInfo
	target string
	// latency is the shortest execution of a tool seen so far (timeout-retry and
	// mismatch-in-flight give up at three quarters of it).
	latency map[string]time.Duration
	// effects is the validated effects expression of each tool (check.tools.NAME.effects).
	effects map[string]string
	// snapArgs are the arguments of the configured snapshot calls, by tool.
	snapArgs map[string]map[string]any
	// works says whether a tool's plain call with its arguments succeeded (key-scope partners).
	works map[string]bool
	// diagnoses are whole-server findings of these checks, printed above the matrix.
	diagnoses []string
}

// maxExpiryWait is the longest key_ttl the expiry check waits out in a full battery: a longer one
// (keys kept for a day are common) would hold every CI run that long, so it waits only when the
// user asks for that check by name.
const maxExpiryWait = time.Minute

// extra decides the cells of the checks in this file; nil for the other checks.
func (b *battery) extra(id string, t runner.ToolInfo, args map[string]any) *Cell {
	natural := "idempotent by nature (" + b.naturalWhy() + ")"
	switch id {
	case TimeoutRetry:
		return b.timeoutRetry(t, args, natural)
	case Expiry:
		if b.cfg.KeyTTL <= 0 {
			return &Cell{Check: id, Status: Skip, Reason: "opt-in: declare how long keys must live with check: {key_ttl: DURATION}"}
		}
		if b.cfg.KeyTTL > maxExpiryWait && !contains(b.opts.Only, Expiry) {
			return &Cell{Check: id, Status: Skip, Reason: fmt.Sprintf("key_ttl %s is longer than check waits unasked (%s): run it alone with --only expiry", b.cfg.KeyTTL, maxExpiryWait)}
		}
	case KeyScope, ErrorsNotReplayed, MismatchInFlight:
	default:
		return nil
	}
	if t.Natural {
		return &Cell{Check: id, Status: Skip, Reason: natural + ": a key is not what makes it safe"}
	}
	switch id {
	case Expiry:
		return b.expiry(t, args)
	case KeyScope:
		return b.keyScope(t, args)
	case ErrorsNotReplayed:
		return b.errorsNotReplayed(t, args)
	case MismatchInFlight:
		return b.mismatchInFlight(t, args)
	}
	return nil
}

// insertAt puts extra steps just before (after: just after) the step with the given id.
func insertAt(steps []spec.Step, id string, after bool, extra ...spec.Step) []spec.Step {
	for i, s := range steps {
		if s.ID == id {
			if after {
				i++
			}
			return append(append(append([]spec.Step(nil), steps[:i]...), extra...), steps[i:]...)
		}
	}
	return steps
}

// expiry retries after the declared key lifetime: the key must still be remembered.
func (b *battery) expiry(t runner.ToolInfo, args map[string]any) *Cell {
	ttl := b.cfg.KeyTTL
	first := spec.Step{ID: "first", CallTool: t.Name, Args: args}
	steps := b.snap.WithState(first, spec.Step{ID: "retry", RetryOf: "first", Expect: "any"})
	steps = insertAt(steps, "retry", false, spec.Step{Sleep: ttl.String()})
	s := b.spec(t, Expiry, "a retry after the declared key lifetime ("+ttl.String()+") still gets the stored answer", steps...)
	s.Comment = "A call, then its retry with the same key after check.key_ttl: the key must still be remembered, so the retry must not execute again."
	s.executions = 1
	c := b.retry(Expiry, t, s, "first", "")
	switch c.Status {
	case Fail:
		c.Reason = "after " + ttl.String() + " the key was not remembered: " + c.Reason
	case Pass, Warn, Inconclusive:
		c.Reason = "after " + ttl.String() + ": " + c.Reason
	}
	return c
}

// partner is the mutating tool key-scope sends the borrowed key to: another tool whose plain call
// works with its arguments (--tool does not limit it; --skip-tool and check.tools.NAME.skip do).
func (b *battery) partner(t runner.ToolInfo) (runner.ToolInfo, map[string]any, bool) {
	var cands []runner.ToolInfo
	rank := map[string]int{}
	earlier := true
	for _, u := range b.x.tools {
		if u.Name == t.Name {
			earlier = false
			continue
		}
		if !u.Mutating || contains(b.opts.SkipTools, u.Name) {
			continue
		}
		// Tools whose rows are done first, so that a tool that works once (a move) is not used
		// up before its own row; then one idempotent by nature, which calling changes least.
		switch {
		case earlier && selected(u.Name, b.opts.Tools, nil) && !u.Natural:
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
		a, why := b.args(u, b.x.target)
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
func (b *battery) keyScope(t runner.ToolInfo, args map[string]any) *Cell {
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

// errorsNotReplayed sends a call the server must refuse (a required argument left out), then
// the corrected call with the same key: an error is not an outcome to store, so the corrected
// call must execute.
func (b *battery) errorsNotReplayed(t runner.ToolInfo, args map[string]any) *Cell {
	bad, field, ok := synth.Broken(t.InputSchema, b.def.Key.Arg, args)
	if !ok {
		return &Cell{Check: ErrorsNotReplayed, Status: Skip, Reason: "no required argument to leave out, so no refused call to retry"}
	}
	s := b.spec(t, ErrorsNotReplayed, "a refused call does not bind its key: the corrected retry executes",
		spec.Step{ID: "broken", CallTool: t.Name, Args: bad, Expect: "any"},
		spec.Step{ID: "retry", RetryOf: "broken", Args: args, Expect: "any"},
		spec.Step{Assert: "broken.ok || (retry.ok && !retry.replayed)"})
	s.Comment = fmt.Sprintf("A call without %s, which the server refuses, then the corrected call with the same key: nothing executed, so nothing may be stored under the key, and the corrected call must execute.", field)
	s.executions = 1
	j, done := b.judge(s, "", "retry")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		return c
	}
	c.Evidence = byAnswers
	br := calls(tr, "broken")
	switch {
	case len(br) == 0:
		c.Status, c.Reason = Inconclusive, "the call without "+field+" was not sent"
	case br[0].Outcome == scenario.OK:
		c.Status, c.Reason = Inconclusive, "the call without "+field+" succeeded, so there was no refused call to retry"
	case br[0].Outcome == scenario.Info:
		c.Status, c.Reason = Inconclusive, "the outcome of the call without "+field+" is unknown"+statusNote(br[0])
	case r.Outcome == scenario.OK && r.Replayed:
		c.Status, c.Reason = Fail, "the corrected call with the key of a refused call got a replay, not an execution"
	case r.Outcome == scenario.OK:
		c.Status, c.Reason = Pass, "refused without "+field+statusNote(br[0])+"; the corrected call with the same key executed"
	case r.Outcome == scenario.Info:
		c.Status, c.Reason = Inconclusive, "the corrected call's outcome is unknown"+statusNote(r)
	case r.Status == br[0].Status && state.Equal(r.Result, br[0].Result):
		c.Status, c.Evidence = Fail, byStatus
		c.Reason = "the corrected call got the refused call's error again" + statusNote(r) + ": the error was stored under the key"
	default:
		c.Status, c.Evidence = Fail, byStatus
		c.Reason = "the corrected call with the key of a refused call was refused" + statusNote(r) + ": the key stayed bound to the call that never executed"
	}
	if c.Status == Fail && r.Outcome == scenario.Fail {
		// A tool that refuses the corrected arguments with any key says nothing about keys.
		if ok, why := b.control(t, args); !ok {
			c.Status, c.Evidence = Inconclusive, byStatus
			c.Reason = "the corrected call was refused" + statusNote(r) + ", but so is a call with a fresh key" + why + ": the refusal is not about the key"
		}
	}
	if c.Status != Pass {
		c.Details = details(res, tr)
	}
	return c
}

// timeoutRetry gives up on a call while the server works and retries it with the same key, as a
// framework does after a client timeout; a last retry once everything settled reads the stored
// answer. The key must have executed once.
func (b *battery) timeoutRetry(t runner.ToolInfo, args map[string]any, natural string) *Cell {
	timeout := b.giveUp(t.Name)
	first := spec.Step{ID: "first", CallTool: t.Name, Args: args, Timeout: timeout.String(), Expect: "any"}
	retry := spec.Step{ID: "retry", RetryOf: "first", Expect: "any",
		Retry: &spec.Retry{Attempts: 5, On: []string{"info", "conflict"}, Backoff: (2 * timeout).String()}}
	// The retry goes right after the timed-out call, before the snapshots read after it.
	steps := insertAt(b.snap.WithState(first, spec.Step{ID: "again", RetryOf: "first", Expect: "any"}), "first", true, retry)
	steps = append(steps, b.snap.WholeAsserts(b.oneCall)...)
	s := b.spec(t, TimeoutRetry, "a retry after a client timeout does not execute again", steps...)
	s.Comment = fmt.Sprintf("The client gives up after %s while the server works, then retries with the same key (backing off on timeouts and conflicts); a last retry once everything settled must get the same stored answer.", timeout)
	s.executions = b.once(t)
	c := b.retry(TimeoutRetry, t, s, "first", natural+": its answers are no evidence of executions")
	if s.last == nil || c.Status == Fail {
		return c
	}
	if c.Status == Warn {
		// A refused retry is a deviation only if the tool works with a fresh key.
		b.inconclusiveControl(c, t, args, "the retry after a client timeout")
		return c
	}
	tr := trialOf(s.last)
	if names, lines := b.snap.GrewMore(tr, b.oneCall); len(names) > 0 {
		c.Status, c.Evidence = Fail, "state ("+strings.Join(names, ", ")+")"
		c.Reason = "the call given up on and its retry both executed: " + strings.Join(lines, "; ")
		c.Details = details(s.last, tr)
		return c
	}
	if f := calls(tr, "first"); len(f) > 0 && f[0].Outcome != scenario.Info {
		c.Status = Inconclusive
		c.Reason = fmt.Sprintf("the first call was answered within %s (%s), so the client never gave up; %s", timeout, f[0].Outcome, c.Reason)
		return c
	}
	rs := calls(tr, "retry")
	conflict := false
	for _, r := range rs {
		conflict = conflict || r.Conflict
	}
	if c.Status == Pass && b.contentDedup {
		// The retries of the tool answered like second executions: the saved scenario's may too.
		stateDecides(s.Spec, "retry", "again")
	}
	if moved, _ := b.snap.Compare(tr); c.Status == Pass && len(rs) > 0 && !rs[len(rs)-1].Replayed && !conflict && len(moved) == 0 {
		// The retry executed: the call given up on either never ran or ran as well.
		c.Status, s.needsEvidence = Inconclusive, true
		c.Reason = "the retry was executed, not replayed: the call given up on either never reached the server or executed as well, and only state, sinks or effects can tell which"
		c.Details = details(s.last, tr)
	}
	return c
}

// mismatchInFlight gives up on a call while the server works and sends the same key with
// another payload at once: it must be refused (409 or the profile's mismatch status), never
// executed nor replayed. A last retry of the first call, once everything settled, tells whether
// both payloads executed.
func (b *battery) mismatchInFlight(t runner.ToolInfo, args map[string]any) *Cell {
	otherArgs, field, ok := synth.Vary(args)
	if !ok {
		return &Cell{Check: MismatchInFlight, Status: Skip, Reason: "no argument to vary"}
	}
	timeout := b.giveUp(t.Name)
	first := spec.Step{ID: "first", CallTool: t.Name, Args: args, Timeout: timeout.String(), Expect: "any"}
	other := spec.Step{ID: "other", CallTool: t.Name, Args: otherArgs, Key: "{{ first.key }}", Expect: "any"}
	// Whether the retry executes again is replay's business; here only what the key holds.
	again := spec.Step{ID: "again", RetryOf: "first", Expect: "any", Verdict: "off",
		Retry: &spec.Retry{Attempts: 5, On: []string{"info", "conflict"}, Backoff: (2 * timeout).String()}}
	steps := insertAt(b.snap.WithState(first, again), "first", true, other)
	steps = append(append(steps, b.snap.WholeAsserts(b.oneCall)...), spec.Step{Assert: "!other.ok"})
	s := b.spec(t, MismatchInFlight, "the same key with another payload while the first call is in flight is rejected", steps...)
	s.Comment = fmt.Sprintf("The client gives up on a call after %s while the server works, and at once sends the same key with another %s: it must be refused, neither executed nor replayed; a last retry of the first call reads what the key holds.", timeout, field)
	s.executions = 1
	j, done := b.judge(s, "first", "other")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		if o := calls(trialOf(res), "other"); c.Status == Fail && len(o) > 0 && o[0].Outcome == scenario.OK {
			c.Reason = "another payload under a key in flight was answered: " + c.Reason
		}
		return c
	}
	f, ag := calls(tr, "first"), calls(tr, "again")
	last := runner.Call{}
	if len(ag) > 0 {
		last = ag[len(ag)-1]
	}
	names, lines := b.snap.GrewMore(tr, b.oneCall)
	c.Evidence = byAnswers
	switch {
	case len(names) > 0:
		c.Status, c.Evidence = Fail, "state ("+strings.Join(names, ", ")+")"
		c.Reason = "both payloads executed under one key: " + strings.Join(lines, "; ")
	case len(f) > 0 && f[0].Outcome != scenario.Info:
		c.Status = Inconclusive
		c.Reason = fmt.Sprintf("the first call was answered within %s (%s), so it was not in flight; payload-mismatch covers a finished call", timeout, f[0].Outcome)
	case r.Outcome == scenario.OK && last.Outcome == scenario.OK && !state.Equal(last.Result, r.Result):
		c.Status = Fail
		c.Reason = "another payload under a key in flight executed" + statusNote(r) + ", and the retry of the first call got another answer: both payloads executed under one key"
	case r.Outcome == scenario.OK && r.Replayed:
		c.Status = Fail
		c.Reason = "another payload under a key in flight got a replay"
	case r.Outcome == scenario.OK:
		c.Status = Inconclusive
		c.Reason = "another payload under a key in flight was answered" + statusNote(r) + ", and the first call's retry then " + string(last.Outcome) + statusNote(last) + ": the second payload may have reached the server first"
	case r.Outcome == scenario.Fail && r.Status == 409:
		c.Status, c.Evidence, c.Reason = Pass, byStatus, "another payload under a key in flight: rejected with 409"
	default:
		b.rejected(c, r, b.prof.mismatch, "another payload under a key in flight")
		b.inconclusiveControl(c, t, otherArgs, "another payload under a key in flight")
	}
	if c.Status != Pass {
		c.Details = append(lines, details(res, tr)...)
	}
	return c
}

// giveUp is how long timeout-retry and mismatch-in-flight wait before giving up on a call: three
// quarters of the tool's shortest execution, at least 1ms. The call has then reached the server
// (under load half was not always enough: the next call overtook it) and is still in flight.
func (b *battery) giveUp(tool string) time.Duration {
	return min(max(b.x.latency[tool]*3/4, time.Millisecond), 5*time.Second)
}

// noteLatency remembers the shortest execution of a tool seen so far: a call that was answered
// (or whose answer was discarded) and not replayed. The first call of a battery is often slow
// (connections, caches), so the shortest is what an in-flight check can wait for.
func (x *extras) noteLatency(tool string, tr *runner.Trial) {
	if tr == nil {
		return
	}
	for _, c := range tr.Calls {
		if c.Tool != tool || c.Copy != 0 || c.Replayed || c.Duration <= 0 || (c.Outcome != scenario.OK && !c.Lost) {
			continue
		}
		if x.latency == nil {
			x.latency = map[string]time.Duration{}
		}
		if l, ok := x.latency[tool]; !ok || c.Duration < l {
			x.latency[tool] = c.Duration
		}
	}
}
