package sweep

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	runresult "github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenariogen"
)

// maxHistory bounds the calls shown under a cell: a run is the whole trace, so more than check.
const maxHistory = 100

// callOutcome is what the agent would have learnt from one call of the trace in one run.
type callOutcome struct {
	sent    bool
	outcome outcome.Outcome
	why     string // the error, or why it was not sent
	// refused is set when the faulted call's retry was refused on every attempt of its loop:
	// when it was refused ("after the call completed") and what the attempts spanned.
	refused *refusedRetry
}

// refusedRetry is a retry refused on every attempt: a refusal for ever, whatever its shape.
type refusedRetry struct {
	after    string // "after the call completed", "after the client gave up"
	attempts int
	span     string // "over 350ms", or "(over 1.55s)" where it depends on the give-up
}

func (r *refusedRetry) line(seq int, tool string, was outcome.Outcome, why string) string {
	return fmt.Sprintf("call %d %s: %s in run 0, but here every retry %s was refused%s: %d attempts %s, so the agent can never learn the outcome", seq, tool, was, r.after, why, r.attempts, r.span)
}

// result is one run's evidence.
type result struct {
	cell  *Cell
	res   *runresult.ScenarioResult
	trial *runresult.Trial
	// broken says why the run is no evidence ("" when it is).
	broken string
	calls  map[string]callOutcome
	reads  []observed
	sinks  map[string]int
	// verdict holds the exactly-once verdict's lines when a key executed more than once.
	verdict []string
	// faultUnknown is set when the faulted call's final outcome (retry, copies) is unknown.
	faultUnknown string
	plan         *plan
	reads0       []read
	// shared is set when the run began on the server earlier runs left behind.
	shared bool
	// note tells what the fault did (a timeout fault: whether the client gave up, the retries).
	note string
	// unseen is set when the client gave up on the faulted call and its retry executed rather
	// than replayed: whether the call given up on executed too only state can tell.
	unseen bool
	// missed says why a run judged nothing: a timeout run's call given up on was not in flight
	// when its retry came, a duplicate run's copies did not overlap ("" when they were, or may
	// have been). again says another run may help, and giveUp is then how long a timeout run
	// waits before giving up; compare keeps again only when missed decided the cell.
	missed string
	again  bool
	giveUp time.Duration
}

// spec builds the run's scenario: the state reads, the trace's calls, the state reads again,
// and, with asserts, for a scenario to save, the assertions that every call that succeeded in
// run 0 succeeds. A sweep judges its runs itself (compare), so the runs it executes leave them
// out: each compiles against every step before it, which would make one run's scenario grow
// with the square of the trace.
func (s *sweeper) spec(r run, asserts bool) *scenariogen.Spec {
	var steps []scenariogen.Step
	for i, tool := range s.snapshots {
		steps = append(steps, scenariogen.Step{ID: s.reads[i].before, CallTool: tool, Expect: "any"})
	}
	for _, pc := range s.plan.calls {
		if !pc.mutating && !hasCarried(pc.args) {
			args, _ := r.render(pc.args).(map[string]any)
			steps = append(steps, scenariogen.Step{ID: pc.id + "_before", CallTool: pc.tool, Args: args, Expect: "any"})
		}
	}
	steps = append(steps, r.steps(s.plan)...)
	for i, tool := range s.snapshots {
		steps = append(steps, scenariogen.Step{ID: s.reads[i].after, CallTool: tool, Expect: "any"})
	}
	if r.call != nil && asserts {
		steps = append(steps, s.okAsserts(r)...)
	}
	sp := &scenariogen.Spec{Trials: 1, Endpoint: s.def.Name, Steps: steps, By: "idemtest sweep", Check: r.fault, Tags: []string{"sweep", r.fault}}
	switch {
	case r.call == nil:
		sp.Name = fmt.Sprintf("sweep %s: run 0, the trace replayed without a fault", s.name)
		sp.Tool, sp.Comment = "run0", "The recorded calls in order with fresh keys: the run every faulty run is compared with."
	case r.fault == LostResponse:
		sp.Name = fmt.Sprintf("sweep %s: call %d %s loses its response and is retried with its key", s.name, r.call.seq, r.call.tool)
		sp.Tool = fmt.Sprintf("c%d-%s", r.call.seq, r.call.tool)
		sp.Comment = fmt.Sprintf("The recorded calls in order; call %d (%s) completes on the server but its answer is lost, and the agent retries it with the same key. The state at the end must be what the run without a fault leaves.", r.call.seq, r.call.tool)
	case r.fault == Timeout:
		sp.Name = fmt.Sprintf("sweep %s: call %d %s times out on the client and is retried with its key", s.name, r.call.seq, r.call.tool)
		sp.Tool = fmt.Sprintf("c%d-%s", r.call.seq, r.call.tool)
		sp.Comment = fmt.Sprintf("The recorded calls in order; the client gives up on call %d (%s) after %s while the server may still work on it, and retries it at once with the same key until it gets an answer (an in-progress conflict is retried). The state at the end must be what the run without a fault leaves.", r.call.seq, r.call.tool, r.giveUp)
	default:
		sp.Name = fmt.Sprintf("sweep %s: call %d %s is sent twice at once with one key", s.name, r.call.seq, r.call.tool)
		sp.Tool = fmt.Sprintf("c%d-%s", r.call.seq, r.call.tool)
		sp.Comment = fmt.Sprintf("The recorded calls in order; call %d (%s) is sent as two concurrent copies with one key. The state at the end must be what the run without a fault leaves.", r.call.seq, r.call.tool)
	}
	return sp
}

// okAsserts are the assertions that every call that succeeded in run 0 succeeds in run r too
// (through its retry or one of its copies), so a saved run fails where it diverged in outcome.
func (s *sweeper) okAsserts(r run) []scenariogen.Step {
	var out []scenariogen.Step
	for _, pc := range s.plan.calls {
		if !s.ok0[pc.id] {
			continue
		}
		expr := pc.id + ".ok"
		if r.call == pc {
			switch r.fault {
			case LostResponse, Timeout:
				expr = retryID(pc.id) + ".ok"
			case Duplicate:
				expr = pc.id + ".ok > 0"
			}
		}
		out = append(out, scenariogen.Step{Assert: expr})
	}
	return out
}

// build compiles the scenario a run executes. It is built when the run starts and dropped when it
// ends: a sweep holds one run's scenario at a time.
func (s *sweeper) build(r run) (*scenario.Scenario, error) {
	return s.spec(r, false).Scenario(s.base)
}

// execute runs one run through the runner and gathers its evidence.
func (s *sweeper) execute(r run) *result {
	start := time.Now()
	out := &result{cell: &Cell{Fault: r.fault, run: r}, plan: s.plan, reads0: s.reads, shared: !s.opts.FreshPerRun && r.call != nil}
	if r.call != nil {
		out.cell.Seq, out.cell.Tool = r.call.seq, r.call.tool
	}
	defer func() { out.cell.Duration = time.Since(start) }()
	if s.opts.FreshPerRun && r.call != nil {
		s.env.Close()
		s.env = nil
		env, err := runner.Start(s.ctx, []*scenario.Scenario{s.base})
		if err != nil {
			out.broken = "could not start the environment: " + err.Error()
			return out
		}
		s.env = env
	}
	sc, err := s.build(r)
	if err != nil {
		out.broken = "could not build the scenario: " + err.Error()
		return out
	}
	rep := s.env.Run(s.ctx, []*scenario.Scenario{sc}, runner.Options{})
	switch {
	case rep.Err != nil:
		out.broken = "could not run: " + rep.Err.Error()
		return out
	case len(rep.Scenarios) == 0:
		out.broken = "nothing ran"
		return out
	}
	out.res = rep.Scenarios[0]
	out.trial = out.res.FailedTrial
	if out.trial == nil {
		out.trial = out.res.Trial1
	}
	if out.res.Status == runresult.Interrupted || out.trial == nil {
		out.broken = "interrupted"
		return out
	}
	s.observe(r, out)
	return out
}

// observe reads the run's outcomes, state and verdict from its trial.
func (s *sweeper) observe(r run, out *result) {
	t := out.trial
	byStep := map[string][]runresult.Call{}
	for _, c := range t.Calls {
		byStep[c.Step] = append(byStep[c.Step], c)
	}
	notSent := "not sent"
	if f := out.res.Failure; f != nil && f.Kind == runresult.FailError {
		notSent = "not sent: " + f.Message
	}
	out.calls = map[string]callOutcome{}
	for _, pc := range s.plan.calls {
		cs := byStep[pc.id]
		if r.call == pc && (r.fault == LostResponse || r.fault == Timeout) {
			cs = byStep[retryID(pc.id)]
		}
		co := callOutcome{why: notSent}
		if len(cs) > 0 {
			co = combine(cs)
		}
		if r.call == pc {
			co.refused = refusedAll(r, cs)
		}
		out.calls[pc.id] = co
		if r.call == pc && r.fault == Timeout {
			out.note, out.unseen = timeoutNote(r, byStep[pc.id], cs)
			out.missed, out.giveUp = answeredFirst(r, byStep[pc.id])
			if out.missed == "" && !out.unseen {
				out.missed, out.giveUp = metNothing(r, byStep[pc.id], cs)
			}
			out.again = out.giveUp > 0
		}
		if r.call == pc && r.fault == Duplicate {
			out.missed, out.note = copiesApart(cs)
			out.again = out.missed != ""
		}
		if r.call == pc && co.sent && co.outcome == outcome.Info {
			out.faultUnknown = fmt.Sprintf("the outcome of call %d after the fault is unknown (%s)", pc.seq, co.why)
		}
	}
	m := masker{session: t.Session, minted: s.minted(t, byStep)}
	// A read is compared without the endpoint's compare.ignore, as the verdict compares answers.
	view := func(v any) any { return jsonvalue.Without(v, s.def.Ignore) }
	for _, rd := range s.reads {
		var o observed
		if cs := byStep[rd.after]; len(cs) > 0 && cs[len(cs)-1].Outcome == outcome.OK {
			o.ok, o.value = true, m.mask(view(cs[len(cs)-1].Result))
		}
		var before any
		if cs := byStep[rd.before]; rd.before != "" && len(cs) > 0 && cs[0].Outcome == outcome.OK {
			o.beforeOK, before = true, view(cs[0].Result)
		}
		if o.ok {
			o.delta = m.mask(jsonvalue.Diff(before, view(byStep[rd.after][len(byStep[rd.after])-1].Result)))
		}
		out.reads = append(out.reads, o)
	}
	if out.unseen && (len(s.base.Sinks) > 0 || s.stateShows(r, byStep)) {
		// The sinks hear every execution, or a read shows what the retry made: the evidence
		// compared covers the call given up on, and it counts one execution in all. Either the
		// call given up on never ran and the retry executed, or it ran and the server answered
		// the retry with its result unmarked: nothing seen tells which, so nothing is known to
		// have been in flight for the retry to meet.
		out.unseen = false
		out.missed, out.again, out.giveUp = "the retry after the client gave up was not marked as a replay, and what was compared is run 0's: one execution in all, so either the call given up on never ran (dropped when the client gave up, or not yet at the server) or the server replayed its answer unmarked; nothing showed a call in flight for the retry to meet", true, r.giveUp
	}
	if len(s.base.Sinks) > 0 {
		out.sinks = s.env.SinkRequests(s.base)
	}
	if out.res.Metrics.DuplicateExecutions > 0 || out.res.Metrics.ReplaysDiffer > 0 {
		out.verdict = []string{fmt.Sprintf("%d duplicate execution(s)", out.res.Metrics.DuplicateExecutions)}
		if out.res.Metrics.DuplicateExecutions == 0 {
			out.verdict = []string{"a replay differs from the stored answer"}
		}
		if f := out.res.Failure; f != nil && f.Kind == runresult.FailVerdict {
			// Its explanation is in the call history's failure lines.
			out.verdict = []string{f.Message}
		}
	}
}

// stateShows reports whether a read at the end of the run shows a value the server made up in
// the faulted call's retry (its new id): the reads then show that tool's effects, and their
// sameness with run 0 is evidence that the call given up on did not execute unseen. A value
// carried into a later call's arguments does not count: a read may show it because that call
// echoed it (a refund naming its charge), not because it shows the faulted tool's effects.
func (s *sweeper) stateShows(r run, byStep map[string][]runresult.Call) bool {
	retries := byStep[retryID(r.call.id)]
	if len(retries) == 0 {
		return false
	}
	carriedOut := map[string]bool{}
	for _, c := range s.plan.carries {
		if c.From == r.call.seq {
			carriedOut[c.Path] = true
		}
	}
	var made []string
	jsonvalue.Walk(retries[len(retries)-1].Result, func(path string, v any) {
		if str, ok := v.(string); ok && len(str) >= 4 && !s.plan.literals[str] && !carriedOut[path] {
			made = append(made, str)
		}
	})
	for _, rd := range s.reads {
		cs := byStep[rd.after]
		if len(cs) == 0 {
			continue
		}
		shown := jsonvalue.Canonical(cs[len(cs)-1].Result)
		for _, v := range made {
			if strings.Contains(shown, jsonvalue.Canonical(v)) {
				return true
			}
		}
	}
	return false
}

// refusedAll says whether the retry of a lost response or of a timed-out call was refused on
// every attempt its loop makes: every refusal alike, an HTTP status, an MCP tool error, a
// JSON-RPC error or an error-shaped success (nil when it was not).
func refusedAll(r run, retries []runresult.Call) *refusedRetry {
	attempts := scenariogen.RefusedAttempts
	if r.fault == Timeout {
		attempts = retryAttempts
	}
	if (r.fault != LostResponse && r.fault != Timeout) || len(retries) < attempts {
		return nil
	}
	for _, c := range retries {
		if c.Outcome != outcome.Fail {
			return nil
		}
	}
	if r.fault == Timeout {
		return &refusedRetry{after: "after the client gave up", attempts: len(retries), span: fmt.Sprintf("(over %s)", scenariogen.Schedule(len(retries), r.backoff()))}
	}
	return &refusedRetry{after: "after the call completed", attempts: len(retries), span: "over " + scenariogen.RefusedWindow().String()}
}

// combine is the agent's view of a step's calls: a fan-out succeeded when a copy did.
func combine(cs []runresult.Call) callOutcome {
	co := callOutcome{sent: true, outcome: cs[len(cs)-1].Outcome, why: cs[len(cs)-1].Error}
	if len(cs) > 1 {
		for _, c := range cs {
			if c.Outcome == outcome.OK {
				return callOutcome{sent: true, outcome: outcome.OK}
			}
		}
	}
	if co.why == "" && co.outcome != outcome.OK {
		co.why = fmt.Sprintf("status %d", cs[len(cs)-1].Status)
	}
	return co
}

// minted are the strings the server made up in this run: values in the answers of its mutating
// calls that the recording holds nowhere (a new id, not a currency the recording saw too).
func (s *sweeper) minted(t *runresult.Trial, byStep map[string][]runresult.Call) map[string]bool {
	mutating := map[string]bool{}
	for _, pc := range s.plan.calls {
		if pc.mutating {
			mutating[pc.id], mutating[retryID(pc.id)] = true, true
		}
	}
	out := map[string]bool{}
	for _, c := range t.Calls {
		if !mutating[c.Step] {
			continue
		}
		jsonvalue.Walk(c.Result, func(_ string, v any) {
			if str, ok := v.(string); ok && !s.plan.literals[str] {
				out[str] = true
			}
		})
	}
	return out
}

// brokenBaseline says why run 0 is no evidence ("" when it is).
func brokenBaseline(b *result) string {
	if b.broken != "" {
		return b.broken
	}
	for _, pc := range b.plan.calls {
		if co := b.calls[pc.id]; !co.sent {
			return fmt.Sprintf("call %d %s was %s", pc.seq, pc.tool, co.why)
		}
	}
	if len(b.verdict) > 0 {
		return "run 0 itself broke the exactly-once verdict: " + b.verdict[0]
	}
	for _, pc := range b.plan.calls {
		// A call the recording saw succeed must succeed in run 0, else the runs compare a
		// session that went elsewhere (an id no answer showed, state the recording had).
		if co := b.calls[pc.id]; pc.recorded == outcome.OK && co.outcome != outcome.OK {
			return fmt.Sprintf("call %d %s was ok in the recording, %s in run 0%s: run 0 cannot serve as the baseline", pc.seq, pc.tool, co.outcome, because(co))
		}
	}
	return ""
}

// compare decides got's cell against run 0 (base), and base's own cell.
func compare(base, got *result) {
	c := got.cell
	if why := brokenBaseline(base); why != "" {
		c.Status, c.Reason = matrix.Inconclusive, "run 0 is no evidence: "+why
		return
	}
	if got.broken != "" {
		c.Status, c.Reason = matrix.Inconclusive, got.broken
		return
	}
	var lines []string
	if len(got.verdict) > 0 {
		lines = append(lines, got.verdict...)
	}
	for _, pc := range got.plan.calls {
		a, b := base.calls[pc.id], got.calls[pc.id]
		switch {
		case !b.sent:
			lines = append(lines, fmt.Sprintf("call %d %s was %s", pc.seq, pc.tool, b.why))
		case b.outcome == outcome.Info:
			// Unknown is no evidence either way (Jepsen).
		case a.outcome != b.outcome && b.refused != nil:
			lines = append(lines, b.refused.line(pc.seq, pc.tool, a.outcome, because(b)))
		case a.outcome != b.outcome:
			lines = append(lines, fmt.Sprintf("call %d %s: %s in run 0, %s here%s", pc.seq, pc.tool, a.outcome, b.outcome, because(b)))
		}
	}
	shown := map[string]bool{}
	var unchanged []string
	for i, rd := range got.reads0 {
		same, diff := compareRead(rd, base.reads[i], got.reads[i])
		switch {
		case same:
		case got.shared && sawNoChange(rd, base.reads[i], got.reads[i]):
			unchanged = append(unchanged, rd.label)
		case !shown[strings.Join(diff[1:], "\n")]:
			// Two reads of one tool that show the same difference are shown once.
			shown[strings.Join(diff[1:], "\n")] = true
			lines = append(lines, diff...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(base.sinks)) {
		if base.sinks[name] != got.sinks[name] {
			lines = append(lines, fmt.Sprintf("sink %s received %d requests, %d in run 0", name, got.sinks[name], base.sinks[name]))
		}
	}
	if got.note != "" && len(lines) > 0 {
		lines = append(lines, "the fault: "+got.note)
	}
	switch {
	case len(lines) > 0:
		c.Status, c.Reason = matrix.Fail, "diverged: "+lines[0]
		c.Details = append(lines[1:], explain.Details(got.res, got.trial, maxHistory)...)
	case len(unchanged) > 0:
		c.Status = matrix.Inconclusive
		c.Reason = fmt.Sprintf("%s: no change here, a change in run 0; %s", strings.Join(unchanged, ", "), sharedHint)
		c.Details = explain.Details(got.res, got.trial, maxHistory)
	case got.unseen:
		// The call given up on either never reached the server or executed as well (its answer
		// unseen); no read, sink or answer differed, which proves nothing when none shows it.
		c.Status, c.Reason = matrix.Inconclusive, "the retry after the client gave up executed rather than replayed, and nothing compared shows whether the call given up on executed too: add a read-only tool or a sink that shows its effect"
		c.Details = explain.Details(got.res, got.trial, maxHistory)
	case got.faultUnknown != "":
		c.Status, c.Reason = matrix.Inconclusive, got.faultUnknown
		c.Details = explain.Details(got.res, got.trial, maxHistory)
	case got.missed != "":
		c.Status, c.Reason = matrix.Inconclusive, got.missed
		c.Details = explain.Details(got.res, got.trial, maxHistory)
	default:
		c.Status, c.Reason = matrix.Pass, "same state as run 0"
	}
	if got.missed == "" || c.Reason != got.missed {
		// Another run helps only when the fault found nothing in flight.
		got.again = false
	}
	switch {
	case got.note == "" || c.Status == matrix.Fail:
	case c.Status == matrix.Pass:
		c.Reason += " (" + got.note + ")"
	default:
		c.Details = append([]string{"the fault: " + got.note}, c.Details...)
	}
}

// answeredFirst says why a timeout run whose call given up on was answered judged nothing, and
// how long another run waits before giving up: as long when the answer took more than twice as
// long as the client was to wait (the machine was too busy to give up in time: an answer within
// the give-up would have been read sooner), half as long when the server really was faster than
// in run 0 (run 0 was slowed down). A call answered at about the shortest give-up (minGiveUp) is
// one no client of that patience gives up on: the fault cannot happen, and the retry that follows
// it is judged like any retry ("" then).
func answeredFirst(r run, first []runresult.Call) (missed string, again time.Duration) {
	if len(first) == 0 || first[0].Outcome == outcome.Info {
		return "", 0
	}
	if d := first[0].Duration; d > 2*r.giveUp {
		return fmt.Sprintf("the call was answered after %s, though the client was to give up on it after %s: the machine was too busy to give up in time, so nothing was in flight", d.Round(time.Millisecond), r.giveUp), r.giveUp
	}
	if r.giveUp > minGiveUp {
		return fmt.Sprintf("the call was answered within about %s, faster than in run 0, so the client never gave up and nothing was in flight", r.giveUp), max(r.giveUp/2, minGiveUp).Round(time.Millisecond)
	}
	return "", 0
}

// metNothing says why a timeout run whose client gave up judged nothing about a call in flight,
// and how long another run waits before giving up: the client gave up and retried, but no
// attempt of the retry was answered in progress, and the retry got an answer that did not
// execute again. The call given up on had then finished before the server took the retry (the
// retry came too late, or the server takes one request at a time): the run tested a replay, not
// a duplicate in flight, whatever the server would do with one. The next run gives up sooner.
// Only the retry's own answers can show the call in flight (a conflict in progress); a retry
// that executed is judged by the evidence (timeoutNote's unseen), a retry refused on every
// attempt by compare. "" when the run had the call in flight or the client never gave up.
func metNothing(r run, first, retries []runresult.Call) (missed string, again time.Duration) {
	if len(first) == 0 || first[0].Outcome != outcome.Info || len(retries) == 0 {
		return "", 0
	}
	for _, c := range retries {
		if inProgress(c) {
			return "", 0
		}
	}
	if last := retries[len(retries)-1]; last.Outcome != outcome.OK || !last.Replayed {
		return "", 0
	}
	return fmt.Sprintf("the retry met no call in flight: the client gave up after %s and retried at once, none of the retry's %d attempt(s) was answered in progress, and it got the stored answer, so the call given up on had finished before the server took the retry (it came too late, or the server takes one request at a time): the run tested a replay, not a duplicate in flight", r.giveUp, len(retries)), max(r.giveUp/2, minGiveUp).Round(time.Millisecond)
}

// timeoutNote says what a timeout fault did: whether the client gave up on the call, and how
// many attempts its retry took; unseen when the client gave up and the retry executed rather
// than replayed, with no in-progress answer on the way.
func timeoutNote(r run, first, retries []runresult.Call) (note string, unseen bool) {
	if len(retries) == 0 {
		return fmt.Sprintf("the client gave up after %s; the retry was not sent", r.giveUp), false
	}
	if len(first) > 0 && first[0].Outcome != outcome.Info {
		if d := first[0].Duration; d > 2*r.giveUp {
			return fmt.Sprintf("answered after %s, though the client was to give up after %s: the retry came after it", d.Round(time.Millisecond), r.giveUp), false
		}
		return fmt.Sprintf("answered within %s, so the client never gave up: the retry came after it", r.giveUp), false
	}
	conflicts := 0
	for _, c := range retries {
		if inProgress(c) {
			conflicts++
		}
	}
	note = fmt.Sprintf("the client gave up after %s; the retry took %d attempt(s), %d answered in progress", r.giveUp, len(retries), conflicts)
	if last := retries[len(retries)-1]; conflicts == 0 && last.Outcome == outcome.OK && !last.Replayed {
		note += "; the retry executed rather than replayed, so only the state shows whether the call given up on executed too"
		unseen = true
	}
	return note, unseen
}

// sharedHint says how to give every run the same starting state.
const sharedHint = "the runs share one server: use --fresh-per-run (or a config with services) so each run starts from the same state"

// sawNoChange reports whether a read showed a change since its run began in run 0 and none in
// a run that shared the server with run 0: a read model that shows a set (which accounts were
// refunded) changes once for the same arguments, so the runs after run 0 cannot show it again.
// That is no evidence either way.
func sawNoChange(r read, base, got observed) bool {
	return r.before != "" && base.ok && got.ok && base.beforeOK && got.beforeOK && base.delta != nil && got.delta == nil
}

func because(co callOutcome) string {
	if co.why == "" {
		return ""
	}
	return " (" + co.why + ")"
}

// baselineCell decides run 0's own cell.
func baselineCell(b *result) {
	c := b.cell
	if why := brokenBaseline(b); why != "" {
		c.Status, c.Reason = matrix.Inconclusive, why
		if b.broken == "" && len(b.verdict) > 0 {
			// The recorded session itself executes a key twice (a retry the agent made): a
			// finding on its own, though no fault's run can be compared with it.
			c.Status = matrix.Fail
		}
		if b.res != nil {
			c.Details = explain.Details(b.res, b.trial, maxHistory)
		}
		return
	}
	n := 0
	var failed []string
	for _, pc := range b.plan.calls {
		n++
		if co := b.calls[pc.id]; co.outcome != outcome.OK {
			failed = append(failed, fmt.Sprintf("%d %s", pc.seq, co.outcome))
		}
	}
	c.Status, c.Reason = matrix.Pass, fmt.Sprintf("%d calls replayed", n)
	if len(failed) > 0 {
		c.Reason += "; not ok (as the faulty runs must match): " + strings.Join(failed, ", ")
	}
}
