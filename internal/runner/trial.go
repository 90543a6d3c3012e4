package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/ctxwait"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/verdict"
)

// trialState is what one trial's steps share.
type trialState struct {
	sc    *scenario.Scenario
	trial *result.Trial
	env   map[string]any
	index int // logical calls so far, for default keys
	keys  map[string]string
	args  map[string]map[string]any
	sent  map[string]string // keys already sent in this trial, with the step that sent each first
	// judged holds every call of the trial as the verdict sees it; exempt the steps whose
	// calls it does not judge (verdict: off, a tool idempotent by nature).
	judged  []verdict.Call
	exempt  map[string]string // step id → why it is not judged (an Unjudged reason), "" when it is
	metrics *result.Metrics
	res     *result.ScenarioResult
	paths   *pathTracker
	// spread picks the instance of each call to an endpoint of several.
	spread spreader
	mu     sync.Mutex
}

func (r *runner) trial(ctx context.Context, sc *scenario.Scenario, idx int, res *result.ScenarioResult, paths *pathTracker) *result.Trial {
	start := time.Now()
	t := &result.Trial{Index: idx, Session: r.session(idx), Start: start}
	st := &trialState{
		sc: sc, trial: t,
		env:     map[string]any{"session": t.Session, "trial": idx},
		keys:    map[string]string{},
		args:    map[string]map[string]any{},
		sent:    map[string]string{},
		exempt:  map[string]string{},
		metrics: &res.Metrics,
		res:     res,
		paths:   paths,
		spread:  spreader{session: t.Session},
	}
	defer func() { t.Duration = time.Since(start) }()
	// The verdict judges whatever the trial sent, however it ended.
	defer r.judge(st)
	for _, s := range r.sinks.of(sc) {
		s.s.Reset()
	}
	if f := r.preflight(st); f != nil {
		t.Failure = f
		return t
	}
	for _, step := range sc.Steps {
		if err := r.svcs.Dead(); err != nil {
			t.Failure = result.StepError(step, err)
			return t
		}
		if ctx.Err() != nil {
			t.Failure = result.StepFailure(result.FailError, step, "interrupted")
			return t
		}
		var f *result.Failure
		switch step.Kind {
		case scenario.CallStep:
			f = r.call(ctx, st, step)
		case scenario.AssertStep:
			f = r.assert(ctx, st, step)
		case scenario.SleepStep:
			_ = ctxwait.Sleep(ctx, step.Sleep) // the next step sees ctx end
		}
		if f != nil {
			if f.Kind != result.FailError {
				// A dead service explains a failed call better than the call does.
				if err := r.svcs.Dead(); err != nil {
					f = result.StepError(step, err)
				}
			}
			t.Failure = f
			return t
		}
		// A service that died during the step fails it, the last step too: its exit is no
		// part of a passing run even when every call was answered before it.
		if err := r.svcs.Dead(); err != nil {
			t.Failure = result.StepError(step, err)
			return t
		}
	}
	t.Passed = true
	return t
}

func (r *runner) assert(ctx context.Context, st *trialState, step *scenario.Step) *result.Failure {
	deadline := time.Now().Add(step.Eventually)
	st.paths.read(step, st.env)
	for {
		perr := r.observe(ctx, st, step.Assert.Uses)
		ok, err := evaluate(ctx, func() (bool, error) { return step.Assert.Bool(st.env) })
		if ctx.Err() != nil {
			return interrupted(step)
		}
		if err == nil && ok {
			return nil
		}
		if perr != nil {
			err = perr
		}
		if time.Now().After(deadline) {
			f := result.StepFailure(result.FailAssert, step, "")
			f.Expression = step.Assert.Source
			if err != nil {
				f.Message = "assertion could not be evaluated: " + err.Error()
			} else {
				f.Message = "assertion is false"
				if step.Eventually > 0 {
					f.Message = fmt.Sprintf("assertion still false after %s", step.Eventually)
				}
			}
			var ierr error
			if f.Explanation, ierr = ctxwait.Run(ctx, func() []string { return step.Assert.Explain(st.env) }); ierr != nil {
				return interrupted(step)
			}
			return f
		}
		_ = ctxwait.Sleep(ctx, min(50*time.Millisecond, time.Until(deadline)+time.Millisecond))
	}
}

// interrupted is the failure of a step that Ctrl-C cut short: not a verdict on the tool.
func interrupted(step *scenario.Step) *result.Failure {
	return result.StepFailure(result.FailError, step, "interrupted")
}

func newSession() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (r *runner) session(trial int) string {
	switch {
	case r.opts.Session == "":
		return newSession()
	case trial == 1:
		return r.opts.Session
	}
	return fmt.Sprintf("%s-%d", r.opts.Session, trial)
}
