package runner

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/idemtest/idemtest/internal/proc"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
)

// Options control a run.
type Options struct {
	// Parallel is how many scenarios run at once (at least 1).
	Parallel int
	// Trials overrides every scenario's trials when above 0.
	Trials int
	// Session pins the session id: trial 1 uses it as is, trial N uses "<session>-N".
	Session  string
	FailFast bool
	// OnEvent, when set, is told about progress; it is called from several goroutines.
	OnEvent func(Event)
	// Coverage, when set, lists in the report the mutating tools no scenario called, before
	// the services stop (Env.Coverage).
	Coverage bool
}

// Select keeps the scenarios that have one of tags (any when tags is empty) and whose name
// matches run (any when nil).
func Select(list []*scenario.Scenario, tags []string, run *regexp.Regexp) []*scenario.Scenario {
	var out []*scenario.Scenario
	for _, s := range list {
		if run != nil && !run.MatchString(s.Name) {
			continue
		}
		if len(tags) > 0 && !hasAny(s.Tags, tags) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// Shard keeps shard k of n ("k/n", 1-based): the scenarios are dealt round-robin in the order
// they were loaded (files sorted by path), so every scenario is in exactly one shard.
func Shard(list []*scenario.Scenario, spec string) ([]*scenario.Scenario, error) {
	k, n, err := ParseShard(spec)
	if err != nil {
		return nil, err
	}
	var out []*scenario.Scenario
	for i, s := range list {
		if InShard(i, k, n) {
			out = append(out, s)
		}
	}
	return out, nil
}

// ParseShard reads a --shard value "k/n" (1 <= k <= n, written without signs or leading zeros),
// the one syntax of run's and check's --shard.
func ParseShard(spec string) (k, n int, err error) {
	if _, err := fmt.Sscanf(spec, "%d/%d", &k, &n); err != nil || n < 1 || k < 1 || k > n || fmt.Sprintf("%d/%d", k, n) != spec {
		return 0, 0, fmt.Errorf("%q is not K/N with 1 <= K <= N, such as 2/4", spec)
	}
	return k, n, nil
}

// InShard reports whether the i-th item (from 0) of a list dealt round-robin is in shard k of n.
func InShard(i, k, n int) bool { return i%n == k-1 }

func hasAny(have, want []string) bool {
	for _, w := range want {
		for _, h := range have {
			if h == w {
				return true
			}
		}
	}
	return false
}

// Run starts the services, runs the scenarios and stops the services, whatever happens. When
// ctx is cancelled (Ctrl-C) it stops as soon as every running call has returned, and reports
// what finished.
func Run(ctx context.Context, list []*scenario.Scenario, opts Options) *result.Report {
	start := time.Now()
	env, err := StartWith(ctx, list, opts.OnEvent)
	if err != nil {
		rep := &result.Report{Start: start, Duration: time.Since(start)}
		if ctx.Err() != nil {
			// The services did not start because of the interrupt: nothing failed.
			rep.Interrupted = true
			rep.Scenarios = notRun(list, opts, result.Interrupted)
			return rep
		}
		rep.Err = err
		return rep
	}
	defer env.Close()
	rep := env.Run(ctx, list, opts)
	if opts.Coverage && !rep.Interrupted && ctx.Err() == nil {
		rep.Coverage = env.Coverage(ctx, list, rep)
	}
	return rep
}

// Run runs scenarios on the environment's services, sinks and endpoints; it does not stop them.
// The scenarios' services and sinks must be among those the environment started. Calls to Run
// on one environment are sequential. Each scenario's result is redacted with its own secrets
// (Scenario.Secrets) once it is judged: what the report quotes of it shows none.
func (e *Env) Run(ctx context.Context, list []*scenario.Scenario, opts Options) *result.Report {
	rep := &result.Report{Start: time.Now()}
	defer func() { rep.Duration = time.Since(rep.Start) }()
	if opts.Parallel < 1 {
		opts.Parallel = 1
	}
	r := e.r
	r.opts = opts

	rep.Scenarios = notRun(list, opts, result.Skipped)
	runCtx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	g := new(errgroup.Group)
	g.SetLimit(opts.Parallel)
	for i, sc := range list {
		if runCtx.Err() != nil {
			break
		}
		g.Go(func() error {
			if runCtx.Err() != nil {
				return nil
			}
			res := rep.Scenarios[i]
			r.emit(Event{Kind: EventScenarioStart, Scenario: sc})
			r.scenario(runCtx, sc, res)
			// Judged: the scenario's secrets are replaced in its result now, before the
			// reports, the battery or the sweep quote it (or cut it short, which would cut a
			// secret in two). The same secret is replaced the same way in every result, so
			// answers equal before are equal after.
			res.Redact(r.redactor(sc))
			r.emit(Event{Kind: EventScenarioEnd, Scenario: sc, Result: res})
			if opts.FailFast && (res.Status == result.Failed || res.Status == result.Errored) {
				stopAll()
			}
			return nil
		})
	}
	_ = g.Wait()
	rep.Interrupted = ctx.Err() != nil
	for _, res := range rep.Scenarios {
		switch {
		case res.Status == result.Interrupted && !rep.Interrupted:
			// Cut short by --fail-fast, not by the user.
			res.Status = result.Skipped
		case res.Status == result.Skipped && rep.Interrupted && res.Start.IsZero():
			// Never started because of the interrupt.
			res.Status = result.Interrupted
		}
	}
	return rep
}

// notRun is a result per scenario, none of them started.
func notRun(list []*scenario.Scenario, opts Options, status result.Status) []*result.ScenarioResult {
	out := make([]*result.ScenarioResult, len(list))
	for i, sc := range list {
		out[i] = &result.ScenarioResult{Scenario: sc, Status: status, Trials: trialsOf(sc, opts)}
	}
	return out
}

// TotalTrials is how many trials the scenarios run in all with opts.
func TotalTrials(list []*scenario.Scenario, opts Options) int {
	n := 0
	for _, sc := range list {
		n += trialsOf(sc, opts)
	}
	return n
}

// trialsOf is how many trials sc runs: --trials when given, else the scenario's own.
func trialsOf(sc *scenario.Scenario, opts Options) int {
	if opts.Trials > 0 {
		return opts.Trials
	}
	return sc.Trials
}

// serviceTail is how much of a service's output a failure report shows.
const serviceTail = 2048

// outputMarks is where the output of a scenario's services and stdio MCP servers stands before
// a trial, so that its failure shows only what they wrote during it.
type outputMarks struct {
	services, mcp map[string]int64
}

func (r *runner) marks(sc *scenario.Scenario) outputMarks {
	m := outputMarks{services: r.svcs.Marks(sc), mcp: map[string]int64{}}
	for name, w := range r.endpoints.Stderr(sc) {
		m.mcp[name] = w.Mark()
	}
	return m
}

// mcpStderr adds what the scenario's stdio MCP servers wrote to standard error since the marks
// to a failure. A server started during the trial has no mark: all it wrote counts.
func (r *runner) mcpStderr(sc *scenario.Scenario, marks map[string]int64, f *result.Failure) {
	for name, w := range r.endpoints.Stderr(sc) {
		if out := strings.TrimSpace(w.Since(marks[name])); out != "" {
			if f.ServiceOutput == nil {
				f.ServiceOutput = map[string]string{}
			}
			f.ServiceOutput["mcp "+name] = proc.LastBytes(out, serviceTail)
		}
	}
}

// scenario runs every trial; it stops at the first failing trial.
func (r *runner) scenario(ctx context.Context, sc *scenario.Scenario, res *result.ScenarioResult) {
	res.Start = time.Now()
	defer func() { res.Duration = time.Since(res.Start) }()
	// Scenarios sharing a sink take turns: its recordings belong to one scenario at a time.
	for _, s := range r.sinks.of(sc) {
		s.lock.Lock()
		defer s.lock.Unlock()
	}
	res.Status = result.Passed
	cut := false
	// paths follows the answer paths the assertions read, over every trial.
	var paths pathTracker
	for i := 1; i <= res.Trials; i++ {
		if ctx.Err() != nil {
			cut = true
			break
		}
		marks := r.marks(sc)
		t := r.trial(ctx, sc, i, res, &paths)
		res.History = append(res.History, t)
		r.emit(Event{Kind: EventTrialEnd, Scenario: sc, Trial: i, Session: t.Session})
		if ctx.Err() != nil {
			// The interrupt came before the trial ended: whatever it says (a call cancelled
			// mid-flight, an assertion cut short, a sleep that ended early) is not a verdict on
			// the tool, so the trial is neither passed nor failed.
			res.Cut, cut = t, true
			break
		}
		res.TrialsRun++
		if i == 1 {
			res.Trial1 = t
		}
		if f := unreached(sc, t); f != nil && (t.Failure == nil || t.Failure.Kind != result.FailError) {
			t.Passed, t.Failure = false, f
		}
		if t.Passed {
			res.TrialsPassed++
			if i > 1 {
				// Reports list this trial with each answer capped; nothing reads it whole.
				// Redacted first: the cap would cut a secret in two.
				t.Redact(r.redactor(sc))
				t.Release()
			}
			continue
		}
		res.TrialsFailed++
		if res.FailedTrial != nil && i > 1 {
			t.Redact(r.redactor(sc))
			t.Release()
		}
		if res.FailedTrial == nil {
			res.FailedTrial, res.Failure = t, t.Failure
			t.Failure.ServiceOutput = r.svcs.Tails(sc, marks.services, serviceTail)
			r.mcpStderr(sc, marks.mcp, t.Failure)
			res.Status = result.Failed
		}
		if t.Failure.Kind == result.FailError {
			// The scenario could not run (a service died, an endpoint is misconfigured): more
			// trials would only repeat that.
			res.Status = result.Errored
			break
		}
		if r.opts.FailFast {
			break
		}
	}
	res.Warnings = paths.warnings()
	switch {
	case res.FailedTrial != nil:
		// A failure found before the interrupt stands.
	case cut:
		res.Status = result.Interrupted
	case res.TrialsRun == 0:
		res.Status = result.Skipped
	}
}
