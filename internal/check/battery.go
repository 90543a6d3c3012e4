package check

import (
	"context"
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

// battery runs the checks of one endpoint on one started environment.
type battery struct {
	ctx  context.Context
	env  *runner.Env
	base *scenario.Scenario
	def  *scenario.Endpoint
	opts Options
	prof profile
	cfg  *scenario.CheckConfig
	// snap are the read-only calls whose answers are the server's state, read before and after.
	snap state.Snapshots
	// perCall is what one execution of the current tool sends to each sink that hears from it
	// (nil: no sink evidence).
	perCall map[string]int
	// oneCall is how one call of the current tool changes the snapshot tools' answers (empty:
	// no state evidence).
	oneCall state.Delta
	// contentDedup is set when a retry of the current tool answered like a second execution
	// while the state showed one: the server deduplicates by content.
	contentDedup bool
	// x is what the checks of checks_keys.go and effects.go keep.
	x extras
}

// once is the executions a retry check expects: one, or not counted for a tool idempotent by
// nature, which may execute again harmlessly.
func (b *battery) once(t runner.ToolInfo) int {
	if t.Natural {
		return -1
	}
	return 1
}

// evidence of the sinks.
const bySinks = "sinks"

// probe calls the tool once, plainly, before the battery, and records what one execution sends
// to each sink. A tool that does not work with its arguments cannot be judged: the returned
// reason, when not empty, skips its row instead of reporting failures the tool would have on any
// call.
func (b *battery) probe(t runner.ToolInfo, args map[string]any) string {
	b.perCall, b.oneCall, b.contentDedup = nil, nil, false
	s := b.spec(t, "probe", "one call", b.snap.AroundOne(spec.Step{ID: "probe", CallTool: t.Name, Args: args, Expect: "any"})...)
	res, err := b.exec(s)
	if err != nil {
		return "a plain call could not run: " + err.Error()
	}
	rs := calls(trialOf(res), "probe")
	if len(rs) == 0 {
		return "a plain call was not sent"
	}
	r := rs[len(rs)-1]
	fix := "; give working arguments under check: {tools: {" + t.Name + ": {args: …}}}"
	switch r.Outcome {
	case scenario.Fail:
		if changed, _ := b.snap.ChangedAt(trialOf(res), 0); len(changed) > 0 {
			return "a plain call failed" + statusNote(r) + ", yet it changed " + strings.Join(changed, ", ") +
				": the tool executes, then reports an error, and an agent retries errors; give arguments on which it succeeds to judge its retries"
		}
		if arg := synth.KeyLike(t.InputSchema, b.def.Key.Arg); arg != "" {
			return "a plain call with these arguments fails" + statusNote(r) + "; its input schema declares " + arg +
				", which looks like an idempotency key: if the server reads the key there, set key: {arg: " + arg + "} on the endpoint (idemtest sent it in the " + keyWhere(b.def) + ")"
		}
		return "a plain call with these arguments fails" + statusNote(r) + fix
	case scenario.Info:
		return "a plain call got no answer" + statusNote(r) + ": the tool hangs or is slower than the call timeout (raise the timeout: of the endpoint's mcp: or http: if it is only slow); nothing can be judged without an answer"
	}
	if d, ok := b.snap.Change(trialOf(res)); ok {
		b.oneCall = d
	}
	if len(b.base.Sinks) == 0 {
		return ""
	}
	for name, n := range b.env.SinkRequests(b.base) {
		if n > 0 {
			if b.perCall == nil {
				b.perCall = map[string]int{}
			}
			b.perCall[name] = n
		}
	}
	return ""
}

// sinkAsserts are the assertions that the sinks heard exactly what executions of the tool send.
func (b *battery) sinkAsserts(n int) []spec.Step {
	var out []spec.Step
	for _, name := range sortedKeys(b.perCall) {
		out = append(out, spec.Step{Assert: fmt.Sprintf("len(%s.requests) == %d", name, n*b.perCall[name])})
	}
	return out
}

// sinkCheck compares what the sinks heard in the last trial with what the spec's executions
// send; it returns the sinks that heard more or less, explained.
func (b *battery) sinkCheck(s *plan) (names, lines []string) {
	if b.perCall == nil || s.executions < 0 {
		return nil, nil
	}
	got := b.env.SinkRequests(b.base)
	for _, name := range sortedKeys(b.perCall) {
		want := s.executions * b.perCall[name]
		if got[name] != want {
			names = append(names, name)
			lines = append(lines, fmt.Sprintf("sink %s received %d requests; %d execution(s) send %d", name, got[name], s.executions, want))
		}
	}
	return names, lines
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// evidence names what decided a cell.
const (
	byAnswers = "answers (exactly-once verdict)"
	byStatus  = "status code"
)

// plan is a spec as the battery runs it: the scenario, and what the battery counts and learns
// about it beyond what is written.
type plan struct {
	*spec.Spec
	// executions is how many times the tool must execute in one trial (-1: not counted), for
	// the sinks' evidence.
	executions int
	// sinksAsserted is set once the sink counts were added as assertions.
	sinksAsserted bool
	// sinkNames and sinkLines say which sinks heard more or less than the executions send, in
	// the last run.
	sinkNames, sinkLines []string
	// effects is the effects assertion added (""), effectsLines why it failed in a run, last
	// the last run's result.
	effects      string
	effectsLines []string
	last         *runner.ScenarioResult
	// needsEvidence marks an inconclusive cell that the declared effects can decide.
	needsEvidence bool
}

// newCell is the cell the plan decides.
func (s *plan) newCell() *Cell { return &Cell{Check: s.Check, Scenario: s.Spec, plan: s} }

func (b *battery) spec(t runner.ToolInfo, check, name string, steps ...spec.Step) *plan {
	return &plan{Spec: &spec.Spec{Name: t.Name + ": " + name, Tags: []string{"check", check}, Endpoint: b.def.Name, Tool: t.Name, Check: check, Steps: steps}, executions: -1}
}

// run decides one cell, and adds what the sinks heard to it.
func (b *battery) run(id string, t runner.ToolInfo, args map[string]any) *Cell {
	c := b.cell(id, t, args)
	s := c.plan
	if s == nil || s.executions < 0 || b.perCall == nil || c.Status == Inconclusive || c.Status == Skip {
		return c
	}
	if len(s.sinkNames) == 0 {
		if c.Status == Pass {
			c.Evidence = strings.TrimPrefix(c.Evidence+", "+bySinks+" ("+strings.Join(sortedKeys(b.perCall), ", ")+")", ", ")
		}
		return c
	}
	if c.Status != Fail {
		c.Status, c.Reason = Fail, "the sinks heard another execution: "+strings.Join(s.sinkLines, "; ")
	}
	c.Evidence = strings.TrimPrefix(c.Evidence+", "+bySinks+" ("+strings.Join(s.sinkNames, ", ")+")", ", ")
	c.Details = append(append([]string(nil), s.sinkLines...), c.Details...)
	return c
}

// cell decides one cell from the answers and the state.
func (b *battery) cell(id string, t runner.ToolInfo, args map[string]any) *Cell {
	call := func(stepID string, a map[string]any) spec.Step {
		return spec.Step{ID: stepID, CallTool: t.Name, Args: a}
	}
	if c := b.extra(id, t, args); c != nil {
		return c
	}
	natural := "idempotent by nature (" + b.naturalWhy() + "): its answers are no evidence of executions"
	switch id {
	case Replay:
		s := b.spec(t, id, "a sequential retry with the same key gets the stored answer",
			b.snap.WithState(call("first", args), spec.Step{ID: "retry", RetryOf: "first", Expect: "any"})...)
		s.Comment = "A call, then its retry with the same key: the retry must not execute again."
		s.executions = b.once(t)
		return b.retry(id, t, s, "first", natural)
	case LostResponse:
		lost := call("lost", args)
		lost.LoseResponse, lost.Expect = true, "any"
		s := b.spec(t, id, "a retry after a lost response does not execute again",
			b.snap.WithState(lost, spec.Step{ID: "retry", RetryOf: "lost", Expect: "any"})...)
		s.Comment = "The server completes the call but its answer is lost; the retry with the same key must not execute again."
		s.executions = b.once(t)
		return b.retry(id, t, s, "lost", natural)
	case Concurrent:
		return b.concurrent(t, args, natural)
	case Annotations:
		switch {
		case b.def.MCP == nil:
			return &Cell{Check: id, Status: Skip, Reason: "plain HTTP tools carry no annotations"}
		case t.ReadOnly:
			return b.readOnly(t, call("call", args))
		case !t.Idempotent:
			return &Cell{Check: id, Status: Skip, Reason: "no idempotentHint to check"}
		}
		first := call("first", args)
		// Written out: without_key alone would default to expect: fail.
		first.WithoutKey, first.Expect = true, "ok"
		second := call("second", args)
		second.WithoutKey, second.Expect = true, "any"
		s := b.spec(t, id, "idempotentHint: the same call twice without a key changes the state once", b.snap.WithState(first, second)...)
		s.Comment = "The tool is annotated idempotentHint: calling it twice with the same arguments and no key must leave the state as one call does."
		return b.annotations(s)
	}
	if t.Natural {
		return &Cell{Check: id, Status: Skip, Reason: "idempotent by nature (" + b.naturalWhy() + "): a key is not what makes it safe"}
	}
	switch id {
	case PayloadMismatch:
		other, field, ok := synth.Vary(args)
		if !ok {
			return &Cell{Check: id, Status: Skip, Reason: "no argument to vary"}
		}
		reuse := call("reuse", other)
		reuse.Key, reuse.Expect = "{{ first.key }}", "any"
		steps := append(b.snap.Steps(call("first", args), reuse), spec.Step{Assert: "!reuse.ok"})
		s := b.spec(t, id, "the same key with another payload is rejected", append(steps, b.snap.Unchanged(1)...)...)
		s.Comment = fmt.Sprintf("The same key again with another %s: rejected, neither executed nor replayed.", field)
		s.executions = 1
		return b.mismatch(s, t, other)
	case DistinctKeys:
		steps := append(b.snap.Steps(call("first", args), spec.Step{ID: "second", CallTool: t.Name, Args: args, Expect: "any"}),
			spec.Step{Assert: "second.ok && !second.replayed"},
			spec.Step{Assert: "toJSON(first.result) != toJSON(second.result)"})
		s := b.spec(t, id, "two keys with the same payload are two operations", steps...)
		s.Comment = "Two calls with the same arguments and two keys are two operations: a server that dedupes on the payload instead of the key swallows the second."
		s.executions = 2
		return b.distinct(s, t, args)
	case MissingKey:
		nokey := call("nokey", args)
		nokey.WithoutKey, nokey.Expect = true, "any"
		steps := b.snap.AroundOne(nokey)
		if b.cfg.MissingKey != "accept" {
			steps = append(append(steps, spec.Step{Assert: "!nokey.ok"}), b.snap.Unchanged(0)...)
		}
		s := b.spec(t, id, "a call without a key is rejected", steps...)
		s.Comment = "A mutating call without an idempotency key (check.missing_key: " + b.cfg.MissingKey + ")."
		s.executions = 0
		if b.cfg.MissingKey == "accept" {
			s.executions = -1
		}
		return b.missing(s, t, args)
	}
	return &Cell{Check: id, Status: Skip, Reason: "not implemented"}
}

func (b *battery) naturalWhy() string {
	if b.def.Natural != nil {
		return "natural: on the endpoint"
	}
	return "idempotentHint"
}

// exec runs one spec once through the runner.
func (b *battery) exec(s *plan) (*runner.ScenarioResult, error) {
	if b.perCall != nil && s.executions >= 0 && !s.sinksAsserted {
		s.Steps = append(s.Steps, b.sinkAsserts(s.executions)...)
		s.sinksAsserted = true
	}
	b.beforeRun(s)
	sc, err := s.Scenario(b.base)
	if err != nil {
		return nil, err
	}
	rep := b.env.Run(b.ctx, []*scenario.Scenario{sc}, runner.Options{})
	if rep.Err != nil {
		return nil, rep.Err
	}
	s.sinkNames, s.sinkLines = b.sinkCheck(s)
	if len(rep.Scenarios) == 0 {
		return nil, fmt.Errorf("nothing ran")
	}
	b.afterRun(s, rep.Scenarios[0])
	return rep.Scenarios[0], nil
}

// outcome runs a spec and returns the cell for the cases every check treats alike: it could
// not run, the exactly-once verdict failed, or the first call (which must work) did not.
func (b *battery) outcome(s *plan, first string) (*runner.ScenarioResult, *Cell) {
	c := s.newCell()
	res, err := b.exec(s)
	if err != nil {
		c.Status, c.Reason = Inconclusive, "could not run: "+err.Error()
		return nil, c
	}
	trial := res.FailedTrial
	if trial == nil {
		trial = res.Trial1
	}
	c.Replayed = res.Metrics.Replayed > 0
	c.replaysDiffer = res.Metrics.ReplaysDiffer > 0
	switch {
	case res.Status == runner.Errored || res.Status == runner.Skipped:
		c.Status, c.Reason = Inconclusive, "could not run"
		if res.Failure != nil {
			c.Reason += ": " + res.Failure.Message
		}
	case res.Metrics.DuplicateExecutions > 0 || res.Metrics.ReplaysDiffer > 0 || (res.Failure != nil && res.Failure.Kind == "verdict" && !noID(res)):
		c.Status, c.Evidence = Fail, byAnswers
		c.Reason = fmt.Sprintf("%d duplicate execution(s)", res.Metrics.DuplicateExecutions)
		if res.Metrics.DuplicateExecutions == 0 {
			c.Reason = "a replay differs from the stored answer"
		}
	case res.Failure != nil && res.Failure.Kind == "expect" && res.Failure.Step == first:
		c.Status = Inconclusive
		c.Reason = "the first call did not succeed, so there is nothing to retry: " + res.Failure.Message + b.twice(s, first)
	default:
		return res, nil
	}
	c.Details = details(res, trial)
	return res, c
}

// noID reports that the verdict could not judge a run from its answers alone: equal answers
// without an id prove no replay, so the check's own state comparison decides.
func noID(res *runner.ScenarioResult) bool {
	return res.Metrics.NoID() > 0 && res.Metrics.DuplicateExecutions == 0 && res.Metrics.ReplaysDiffer == 0
}

// noIDReason is why a check whose answers carry no id is inconclusive.
const noIDReason = "the answers carry no id, so equal answers prove no replay, and no read-only tool showed the state"

// noIDComment is what a saved spec says when the state decides because the answers carry no id.
const noIDComment = " Its answers carry no id, so equal answers prove no replay: the state decides (verdict: off)."

// judging is a spec's run, ready to be judged from one step's first call.
type judging struct {
	res  *runner.ScenarioResult
	tr   *runner.Trial
	call runner.Call
	cell *Cell
}

// judge runs a spec; done is true when the cell is already decided (it could not run, the
// verdict failed, the first call failed, or step was never sent).
func (b *battery) judge(s *plan, first, step string) (j judging, done bool) {
	res, c := b.outcome(s, first)
	if c != nil {
		return judging{res: res, cell: c}, true
	}
	j = judging{res: res, tr: trialOf(res), cell: s.newCell()}
	rs := calls(j.tr, step)
	if len(rs) == 0 {
		j.cell.Status, j.cell.Reason = Inconclusive, "the "+step+" call was not sent"
		return j, true
	}
	j.call = rs[len(rs)-1]
	return j, false
}

// calls returns the calls of a step in the trial.
func calls(t *runner.Trial, step string) []runner.Call {
	if t == nil {
		return nil
	}
	var out []runner.Call
	for _, c := range t.Calls {
		if c.Step == step {
			out = append(out, c)
		}
	}
	return out
}

// trialOf is the trial a cell shows: the failed one, else the first (nil without a result).
func trialOf(res *runner.ScenarioResult) *runner.Trial {
	if res == nil {
		return nil
	}
	if res.FailedTrial != nil {
		return res.FailedTrial
	}
	return res.Trial1
}

// retry judges replay and lost-response: the retry of a completed call must be answered with
// the stored result, not executed again.
func (b *battery) retry(id string, t runner.ToolInfo, s *plan, first, natural string) *Cell {
	j, done := b.judge(s, first, "retry")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		if b.overruled(c, res, "the retry") {
			c.Details = details(res, trialOf(res))
			return c
		}
		if res != nil && c.Status == Fail {
			if moved, changed := b.snap.Compare(trialOf(res)); len(changed) > 0 {
				c.Evidence += ", state (" + strings.Join(moved, ", ") + ")"
				c.Reason += "; the retry changed " + strings.Join(changed, ", ") + " again"
				c.Details = append(b.snap.Details(trialOf(res), changed), c.Details...)
			}
		}
		return c
	}
	c.Replayed, c.Evidence = res.Metrics.Replayed > 0, byAnswers
	moved, changed := b.snap.Compare(tr)
	byState := "state (" + strings.Join(moved, ", ") + ")"
	switch {
	case len(changed) > 0:
		c.Status, c.Evidence = Fail, byState
		c.Reason = "the retry changed the state again: " + strings.Join(changed, ", ") + " answers differently after the retry than after the first call"
	case r.Outcome == scenario.Info:
		c.Status, c.Reason = Inconclusive, "the retry's outcome is unknown"+statusNote(r)
	case r.Outcome == scenario.Fail && firstFailed(tr, first):
		c.Status, c.Evidence = Inconclusive, byStatus
		c.Reason = "the lost call failed too (its discarded answer was an error), so the retry's refusal" + statusNote(r) + " says nothing" + b.twice(s, first)
	case r.Outcome == scenario.Fail:
		c.Status, c.Evidence = Warn, byStatus
		c.Reason = "the retry was refused" + statusNote(r) + " instead of answered with the stored result: safe, but the agent never learns the outcome"
	case t.Natural && len(moved) > 0:
		c.Status, c.Evidence = Pass, byState
		c.Reason = "idempotent by nature; the retry left " + strings.Join(moved, ", ") + " as the first call left it"
	case t.Natural:
		c.Status, c.Reason = Inconclusive, natural+", and no read-only tool showed its effect; the retry succeeded"
	case noID(res) && len(moved) > 0:
		c.Status, c.Evidence = Pass, byState
		c.Reason = "the retry left " + strings.Join(moved, ", ") + " as the first call left it (its answers carry no id)"
		stateDecidesBecause(c.Scenario, "retry", noIDComment)
	case noID(res):
		c.Status, c.Reason = Inconclusive, noIDReason
	case c.Replayed:
		c.Status, c.Reason = Pass, "the retry got the stored answer"
		if len(moved) > 0 {
			c.Evidence += ", " + byState
			c.Reason += " and left " + strings.Join(moved, ", ") + " as the first call left it"
		}
	default:
		c.Status, c.Reason = Inconclusive, "the first answer was not seen, so the retry's cannot be compared"
	}
	if c.Status != Pass && (!t.Natural || len(changed) > 0) {
		c.Details = append(b.snap.Details(tr, changed), details(res, tr)...)
	}
	return c
}

func statusNote(r runner.Call) string {
	switch {
	case r.Status != 0 && r.Error != "":
		return fmt.Sprintf(" (status %d: %s)", r.Status, r.Error)
	case r.Status != 0:
		return fmt.Sprintf(" (status %d)", r.Status)
	case r.Error != "":
		return " (" + r.Error + ")"
	}
	return ""
}

// rejected judges a call that must be refused, against the profile's status code.
func (b *battery) rejected(c *Cell, r runner.Call, want int, what string) {
	c.Evidence = byStatus
	switch {
	case r.Outcome == scenario.Info:
		c.Status, c.Reason = Inconclusive, what+": the outcome is unknown"+statusNote(r)
	case r.Status == 0 || want == 0:
		c.Status, c.Reason = Pass, what+": rejected"+statusNote(r)
	case r.Status == want:
		c.Status, c.Reason = Pass, fmt.Sprintf("%s: rejected with %d", what, r.Status)
	default:
		c.Status = Warn
		c.Reason = fmt.Sprintf("%s: rejected with %d; the %s profile expects %d (safe, a protocol deviation)", what, r.Status, b.prof.name, want)
	}
}

func (b *battery) mismatch(s *plan, t runner.ToolInfo, other map[string]any) *Cell {
	j, done := b.judge(s, "first", "reuse")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		if c.Status == Fail && res != nil {
			if rs := calls(trialOf(res), "reuse"); len(rs) > 0 && rs[0].Outcome == scenario.OK {
				c.Reason = "another payload under a used key executed" + statusNote(rs[0])
			}
		}
		return c
	}
	if r.Outcome == scenario.OK {
		c.Status, c.Evidence = Fail, byAnswers
		c.Reason = "another payload under a used key executed" + statusNote(r)
		if r.Replayed || res.Metrics.Replayed > 0 {
			c.Reason = "another payload under a used key got the first call's stored answer (a replay)"
		}
	} else {
		b.rejected(c, r, b.prof.mismatch, "another payload under a used key")
		if !b.executedAnyway(c, r, tr, 1, "another payload under a used key") {
			b.inconclusiveControl(c, t, other, "another payload under a used key")
		}
	}
	if c.Status != Pass {
		c.Details = details(res, tr)
	}
	return c
}

func (b *battery) distinct(s *plan, t runner.ToolInfo, args map[string]any) *Cell {
	j, done := b.judge(s, "first", "second")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		return c
	}
	c.Evidence = byAnswers
	f := res.Failure
	switch {
	case r.Outcome == scenario.Info:
		c.Status, c.Reason = Inconclusive, "the second call's outcome is unknown"+statusNote(r)
	case r.Outcome == scenario.Fail:
		c.Status, c.Reason = Fail, "a new key with the same arguments was refused"+statusNote(r)+": the server dedupes on the payload, not the key"
	case r.Replayed:
		c.Status, c.Reason = Fail, "a new key with the same arguments got a replay: the server dedupes on the payload, not the key"
	case f != nil && f.Kind == "assert":
		c.Status, c.Reason = Inconclusive, "both answers are equal and neither is marked as a replay: two executions and a dedupe on the payload look the same in the answers"
	default:
		c.Status, c.Reason = Pass, "two keys, two executions"
	}
	b.distinctEvidence(c, tr, t, args)
	if c.Status != Pass {
		c.Details = details(res, tr)
	}
	return c
}

func (b *battery) missing(s *plan, t runner.ToolInfo, args map[string]any) *Cell {
	j, done := b.judge(s, "", "nokey")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		return c
	}
	switch {
	case r.Outcome == scenario.OK && b.cfg.MissingKey == "accept":
		c.Status, c.Evidence, c.Reason = Pass, byStatus, "accepted without a key (check.missing_key: accept)"
	case r.Outcome == scenario.OK:
		c.Status, c.Evidence = Fail, byStatus
		c.Reason = "a call without a key executed" + statusNote(r) + ": the server does not require keys (set check.missing_key: accept if that is intended)"
	default:
		b.rejected(c, r, b.prof.missing, "a call without a key")
		if !b.executedAnyway(c, r, tr, 0, "a call without a key") {
			b.inconclusiveControl(c, t, args, "a call without a key")
		}
	}
	if c.Status != Pass {
		c.Details = details(res, tr)
	}
	return c
}

// concurrent repeats a same-key fan-out until a double execution is caught, the rounds are
// done or the budget is spent. Only a round whose copies overlapped is evidence.
func (b *battery) concurrent(t runner.ToolInfo, args map[string]any, natural string) *Cell {
	burst := spec.Step{ID: "burst", CallTool: t.Name, Args: args, Fanout: b.opts.Fanout, Expect: "any"}
	steps := []spec.Step{burst}
	if len(b.oneCall) > 0 {
		steps = append(b.snap.AroundOne(burst), b.snap.BurstAsserts(b.oneCall)...)
	}
	s := b.spec(t, Concurrent, fmt.Sprintf("a burst of %d copies of one key executes once", b.opts.Fanout), steps...)
	s.Comment = fmt.Sprintf("%d copies of one call with one key, released together, in every trial: one executes, the others replay or get a conflict.", b.opts.Fanout)
	s.executions = b.once(t)
	c := s.newCell()
	var spreads []float64
	var last *runner.ScenarioResult
	okCopies, flightWrong, wrongStatus, byState, answersDiffered, unproven := 0, 0, 0, 0, 0, 0
	deadline := time.Now().Add(b.opts.Budget)
	for c.Rounds < b.opts.Rounds && (c.Rounds == 0 || time.Now().Before(deadline)) && b.ctx.Err() == nil {
		s.Trials = 1
		res, cc := b.outcome(s, "")
		if res != nil {
			last = res
		}
		c.Rounds++
		if res != nil {
			c.Overlapped += res.Overlapped
			spreads = append(spreads, res.SpreadsUS...)
		}
		n, why := b.snap.Burst(trialOf(res), b.oneCall)
		if res != nil && noID(res) && n != 1 {
			unproven++
		}
		switch {
		case n > 1 && cc != nil && cc.Status == Fail:
			// The answers caught it too: both are evidence.
			cc.Evidence += ", state (" + strings.Join(b.snap.Tools, ", ") + ")"
			cc.Reason += "; " + why
		case n > 1:
			cc = &Cell{Check: Concurrent, Scenario: s.Spec, plan: s, Status: Fail, Evidence: "state (" + strings.Join(b.snap.Tools, ", ") + ")", Reason: why}
			cc.Details = details(res, trialOf(res))
		case n == 1:
			byState++
			if res != nil && noID(res) && byState == 1 {
				stateDecidesBecause(s.Spec, "burst", noIDComment)
			}
			if f, ok := b.snap.MintedKey(trialOf(res), "burst"); ok && cc != nil && cc.Status == Fail && cc.Evidence == byAnswers {
				cc.Evidence += ", state (" + strings.Join(b.snap.Tools, ", ") + ")"
				cc.Reason += "; a copy answered with a new " + f.String() + " that no other answer carried: " + mintedWhy(b.snap.Tools)
			} else if cc != nil && cc.Status == Fail && cc.Evidence == byAnswers && res.Metrics.DuplicateExecutions > 0 {
				if answersDiffered == 0 {
					stateDecides(s.Spec, "burst")
				}
				answersDiffered++
				cc = nil
			}
		}
		if cc == nil && len(s.sinkNames) > 0 {
			cc = &Cell{Check: Concurrent, Scenario: s.Spec, plan: s, Status: Fail, Reason: "the sinks heard another execution"}
			cc.Details = details(res, trialOf(res))
		}
		if cc != nil {
			cc.Rounds, cc.Overlapped = c.Rounds, c.Overlapped
			cc.SpreadP50US, cc.SpreadMaxUS = quantiles(spreads)
			s.Trials = b.opts.Rounds
			if cc.Status == Fail {
				cc.Reason = fmt.Sprintf("round %d of %d: %s", c.Rounds, b.opts.Rounds, cc.Reason)
			}
			return cc
		}
		for _, call := range calls(trialOf(res), "burst") {
			switch {
			case call.Outcome == scenario.OK:
				okCopies++
			case call.Outcome == scenario.Fail && call.Status != 0 && b.prof.flight != 0 && call.Status != b.prof.flight:
				flightWrong++
				wrongStatus = call.Status
			}
		}
	}
	// Saved, the scenario runs the whole round budget: run then catches what check caught
	// about as often.
	s.Trials = b.opts.Rounds
	c.SpreadP50US, c.SpreadMaxUS = quantiles(spreads)
	c.Evidence = byAnswers
	stats := fmt.Sprintf("%d rounds, %d overlapped, spread p50 %.0fµs max %.0fµs", c.Rounds, c.Overlapped, c.SpreadP50US, c.SpreadMaxUS)
	switch {
	case t.Natural && byState > 0 && c.Overlapped > 0:
		c.Status, c.Evidence = Pass, "state ("+strings.Join(b.snap.Tools, ", ")+")"
		c.Reason = fmt.Sprintf("idempotent by nature; in %d round(s) the burst changed the state as one call changes it: %s", byState, stats)
	case t.Natural:
		c.Status, c.Reason = Inconclusive, natural+"; "+stats
	case okCopies == 0:
		c.Status, c.Reason = Inconclusive, "no copy succeeded in "+stats
	case c.Overlapped == 0:
		c.Status, c.Reason = Inconclusive, "no round overlapped (every answer began before the last copy left), so none is evidence about races: "+stats
	case flightWrong > 0:
		c.Status, c.Evidence = Warn, byStatus
		c.Reason = fmt.Sprintf("one execution per key, but duplicates in flight got %d; the %s profile expects %d: %s", wrongStatus, b.prof.name, b.prof.flight, stats)
	case unproven > 0:
		c.Status, c.Reason = Inconclusive, fmt.Sprintf("in %d round(s) %s: %s", unproven, noIDReason, stats)
	case answersDiffered > 0:
		c.Status, c.Evidence = Warn, "state ("+strings.Join(b.snap.Tools, ", ")+"), answers"
		c.Reason = fmt.Sprintf("the state changed as one call changes it in every round, but in %d round(s) copies answered differently, not as replays (the server deduplicates by content): %s", answersDiffered, stats)
	default:
		c.Status, c.Reason = Pass, "one execution per key: "+stats
		if byState > 0 {
			c.Evidence += ", state (" + strings.Join(b.snap.Tools, ", ") + ")"
			c.Reason = fmt.Sprintf("one execution per key; in %d round(s) the state changed as one call changes it: %s", byState, stats)
			if b.contentDedup {
				// Its retries answered like second executions: the saved burst's copies may
				// too, so there the state decides, as it did for the retries.
				stateDecides(s.Spec, "burst")
			}
		}
	}
	if c.Status != Pass && !t.Natural && last != nil {
		c.Details = details(last, trialOf(last))
	}
	return c
}

func quantiles(xs []float64) (p50, maxv float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2], s[len(s)-1]
}

// maxHistory bounds the calls shown under a cell.
const maxHistory = 12

// Details explains a scenario's result: the runner's failure and up to limit calls of trial t.
func Details(res *runner.ScenarioResult, t *runner.Trial, limit int) []string {
	return explain(res, t, limit)
}

// details explains a cell: the runner's failure and the trial's calls.
func details(res *runner.ScenarioResult, t *runner.Trial) []string {
	return explain(res, t, maxHistory)
}

func explain(res *runner.ScenarioResult, t *runner.Trial, limit int) []string {
	var out []string
	if f := res.Failure; f != nil {
		explanation := f.Explanation
		if f.Kind == "assert" && (strings.HasPrefix(f.Expression, "toJSON(state") || strings.HasPrefix(f.Expression, "toJSON(without(state")) {
			// The state comparison is shown by the cell; keep only what the verdict adds.
			explanation = nil
			for i, l := range f.Explanation {
				if strings.HasPrefix(l, "the exactly-once verdict also failed") {
					explanation = f.Explanation[i+1:]
					break
				}
			}
		} else {
			out = append(out, f.Message)
			if f.Expression != "" {
				out = append(out, "assert: "+f.Expression)
			}
		}
		for _, l := range explanation {
			out = append(out, "  "+l)
		}
	}
	if t == nil {
		return out
	}
	out = append(out, fmt.Sprintf("calls (session %s):", t.Session))
	for i, c := range t.Calls {
		if i == limit {
			out = append(out, fmt.Sprintf("  … and %d more", len(t.Calls)-limit))
			break
		}
		step := c.Step
		if c.Copy > 0 {
			step = fmt.Sprintf("%s copy %d", c.Step, c.Copy)
		}
		key := c.Key
		if key == "" {
			key = "(no key)"
		}
		status := "-"
		if c.Status != 0 {
			status = fmt.Sprint(c.Status)
		}
		line := fmt.Sprintf("  %-18s key %-16s %-4s status %-3s replayed %-5v", step, key, c.Outcome, status, c.Replayed)
		if c.Lost {
			line += " lost"
		}
		if c.Error != "" {
			line += " " + c.Error
		}
		out = append(out, strings.TrimRight(line, " "))
	}
	return out
}

// annotations judges an idempotentHint tool called twice without a key: only the state can tell.
func (b *battery) annotations(s *plan) *Cell {
	j, done := b.judge(s, "first", "second")
	c, res, tr, r := j.cell, j.res, j.tr, j.call
	if done {
		return c
	}
	moved, changed := b.snap.Compare(tr)
	byState := "state (" + strings.Join(moved, ", ") + ")"
	switch {
	case len(changed) > 0:
		c.Status, c.Evidence = Fail, byState
		c.Reason = "annotated idempotentHint, yet the same call again changed " + strings.Join(changed, ", ") + " again"
	case r.Outcome == scenario.Info:
		c.Status, c.Reason = Inconclusive, "the second call's outcome is unknown"+statusNote(r)
	case r.Outcome == scenario.Fail:
		c.Status, c.Evidence = Warn, byStatus
		c.Reason = "annotated idempotentHint, yet the same call again was refused" + statusNote(r)
	case len(moved) > 0:
		c.Status, c.Evidence = Pass, byState
		c.Reason = "the same call again left " + strings.Join(moved, ", ") + " as one call left it"
	default:
		c.Status, c.Reason = Inconclusive, "both calls succeeded, and no read-only tool showed the effect"
	}
	if c.Status != Pass {
		c.Details = append(b.snap.Details(tr, changed), details(res, tr)...)
	}
	return c
}
