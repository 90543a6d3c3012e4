package runner

import (
	"context"
	"fmt"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/ctxwait"
	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/verdict"
)

func (r *runner) call(ctx context.Context, st *trialState, step *scenario.Step) *result.Failure {
	ep, def, err := r.endpoints.Get(st.sc, step.Endpoint)
	if err != nil {
		return result.StepError(step, err)
	}
	if err := r.observe(ctx, st, func(name string) bool { return usesName(step.Args, name) || (step.Key != nil && step.Key.Uses(name)) }); err != nil {
		return result.StepError(step, err)
	}
	var args map[string]any
	if step.Args == nil && step.RetryOf != "" {
		args = st.args[step.RetryOf]
	} else {
		rv, err := evaluate(ctx, func() (any, error) { return render(step.Args, st.env) })
		if ctx.Err() != nil {
			return interrupted(step)
		}
		if err != nil {
			return result.StepFailure(result.FailError, step, "args: "+err.Error())
		}
		args, _ = rv.(map[string]any)
	}
	mutating, err := r.mutating(ctx, ep, def, step.Tool)
	if err != nil {
		return result.StepError(step, err)
	}
	key, err := evaluate(ctx, func() (string, error) { return st.keyFor(step, def, mutating, args) })
	if ctx.Err() != nil {
		return interrupted(step)
	}
	if err != nil {
		return result.StepError(step, err)
	}
	st.exempt[step.ID] = r.exemption(ctx, ep, def, step)
	if key != "" && def.Key.Arg != "" && args != nil {
		// The key travels as an argument and the endpoint adds it; a copy written by hand in the
		// arguments is dropped so that a retry's arguments are the original's.
		delete(args, def.Key.Arg)
	}
	st.keys[step.ID] = key
	st.args[step.ID] = args
	req := endpoint.Request{Tool: step.Tool, Args: args, Key: key, Timeout: step.Timeout, LoseResponse: step.LoseResponse}

	if step.Fanout > 1 {
		return r.fanout(ctx, st, step, ep, def, req)
	}
	var res endpoint.Result
	attempts := 0
	for {
		attempts++
		// A lost response is lost once: the retry loop hears the later attempts' answers.
		req.LoseResponse = step.LoseResponse && attempts == 1
		// Each attempt picks its instance: with round-robin, a retry goes to another one.
		target, inst := ep, (*endpoint.Instance)(nil)
		if eps, insts := st.spread.targets(ep, def, key, 1); eps != nil {
			target, inst = eps[0], insts[0]
		}
		res = target.Call(ctx, req)
		r.record(st, step, 0, attempts, key, res, inst)
		if step.Retry == nil || attempts >= step.Retry.Attempts || !shouldRetry(step.Retry, res) || ctx.Err() != nil {
			break
		}
		backoff := step.Retry.Backoff << (attempts - 1)
		_ = ctxwait.Sleep(ctx, backoff) // the loop's test sees ctx end
	}
	out := callResult(res, key, attempts)
	if res.Lost {
		out = lostResult(res, key)
	}
	st.env[step.ID] = out
	got := outcome.Outcome(out.Outcome)
	if step.Expect != outcome.Any && got != step.Expect {
		return result.StepFailure(result.FailExpect, step, fmt.Sprintf("%s: expected outcome %s, got %s%s", step.Tool, step.Expect, got, describeResult(res)))
	}
	return nil
}

// keyFor decides the idempotency key of a call step: a retry reuses its original's, an
// explicit key (key: or in the arguments) is used as given, otherwise <session>-<index>.
func (st *trialState) keyFor(step *scenario.Step, def *scenario.Endpoint, mutating bool, args map[string]any) (string, error) {
	if step.WithoutKey || !mutating {
		return "", nil
	}
	if step.RetryOf != "" {
		return st.keys[step.RetryOf], nil
	}
	if step.Key != nil {
		v, err := step.Key.Eval(st.env)
		if err != nil {
			return "", fmt.Errorf("key: %w", err)
		}
		// A key built from a server's answer is refused before any copy is sent.
		k := assert.Text(v)
		if err := endpoint.CheckKey(k); err != nil {
			return "", fmt.Errorf("key: %w", err)
		}
		return k, nil
	}
	if def.Key.Arg != "" {
		if k, ok := args[def.Key.Arg].(string); ok && k != "" {
			if err := endpoint.CheckKey(k); err != nil {
				return "", fmt.Errorf("args.%s: %w", def.Key.Arg, err)
			}
			return k, nil
		}
	}
	k := fmt.Sprintf("%s-%d", st.trial.Session, st.index)
	if !def.Key.Format.IsZero() {
		k = def.Key.Format.Key(st.trial.Session, st.index)
	}
	st.index++
	return k, nil
}

func shouldRetry(p *scenario.Retry, res endpoint.Result) bool {
	for _, on := range p.On {
		switch on {
		case scenario.RetryInfo:
			if res.Outcome == outcome.Info {
				return true
			}
		case scenario.RetryConflict:
			if res.Conflict {
				return true
			}
		case scenario.Retry5xx:
			if res.Status >= 500 {
				return true
			}
		case scenario.RetryFail:
			if res.Outcome == outcome.Fail {
				return true
			}
		}
	}
	return false
}

func describeResult(res endpoint.Result) string {
	switch {
	case res.Lost && res.Status != 0:
		return fmt.Sprintf(" (the response, status %d, was discarded)", res.Status)
	case res.Error != "":
		return " (" + res.Error + ")"
	case res.Status != 0:
		return fmt.Sprintf(" (status %d)", res.Status)
	}
	return ""
}

// record appends a call to the trial's history and the metrics.
func (r *runner) record(st *trialState, step *scenario.Step, copy, attempt int, key string, res endpoint.Result, inst *endpoint.Instance) {
	c := result.Call{
		Step: step.ID, Tool: step.Tool, Endpoint: step.Endpoint, Instance: inst, Copy: copy, Attempt: attempt, Key: key,
		Outcome: res.Outcome, Status: res.Status, Replayed: res.Replayed, Conflict: res.Conflict,
		Error: res.Error, Start: res.Start, Duration: res.Duration, Lost: res.Lost,
		Sent: res.Sent, Answered: res.Answered, Result: res.Result, Discarded: res.Discarded, TraceID: res.TraceID,
		Args: st.args[step.ID], Mutating: key != "" || step.WithoutKey,
	}
	st.mu.Lock()
	st.trial.Calls = append(st.trial.Calls, c)
	m := st.metrics
	m.Calls++
	switch c.Outcome {
	case outcome.OK:
		m.OK++
	case outcome.Fail:
		m.Fail++
	case outcome.Info:
		m.Info++
	}
	if c.Conflict {
		m.Conflicts++
	}
	if key != "" {
		m.Keyed++
		// The copies of one fan-out are concurrent duplicates, not retries: a retry is a later
		// step or attempt sending a key again.
		if first, seen := st.sent[key]; seen {
			if copy > 0 && first == step.ID {
				m.Copies++
			} else {
				m.Retries++
			}
		} else {
			st.sent[key] = step.ID
		}
		if why := st.exempt[step.ID]; why != "" {
			m.AddUnjudged(result.Unjudged{Endpoint: step.Endpoint, Tool: step.Tool, Reason: why, Calls: 1})
		}
	}
	var ignore []string
	if def := st.sc.Endpoints[step.Endpoint]; def != nil {
		ignore = def.Ignore
	}
	// The instance does not scope the key: the verdict is per key across every instance.
	instance := 0
	if inst != nil {
		instance = inst.Index
	}
	st.judged = append(st.judged, verdict.Call{
		Key: key, Endpoint: step.Endpoint, Tool: step.Tool, Step: step.ID, Copy: copy, Attempt: attempt, Instance: instance,
		OK:   res.Outcome == outcome.OK || (res.Lost && res.Discarded == outcome.OK),
		Lost: res.Lost, Replayed: res.Replayed, Answer: res.Result, Ignore: ignore, Exempt: st.exempt[step.ID] != "", Args: st.args[step.ID],
	})
	st.mu.Unlock()
	r.emit(Event{Kind: EventCall, Scenario: st.sc, Call: &c, Trial: st.trial.Index, Session: st.trial.Session})
}

// callResult is what assertions see of a call.
func callResult(res endpoint.Result, key string, attempts int) assert.CallResult {
	headers := make(map[string]string, len(res.Headers))
	for k, v := range res.Headers {
		headers[k] = v
	}
	return assert.CallResult{
		OK:         res.Outcome == outcome.OK,
		Outcome:    string(res.Outcome),
		Status:     res.Status,
		Error:      res.Error,
		Result:     res.Result,
		Replayed:   res.Replayed,
		Conflict:   res.Conflict,
		Key:        key,
		DurationMS: float64(res.Duration.Microseconds()) / 1000,
		Headers:    headers,
		Attempts:   attempts,
	}
}

// lostResult is what the scenario sees of a call whose response was discarded: nothing came back.
func lostResult(res endpoint.Result, key string) assert.CallResult {
	return assert.CallResult{
		Outcome: string(outcome.Info), Error: "response discarded (lose_response)", Key: key,
		DurationMS: float64(res.Duration.Microseconds()) / 1000,
		Headers:    map[string]string{}, Attempts: 1, Lost: true,
	}
}

// render evaluates the {{ }} templates in a step's arguments.
func render(v any, env map[string]any) (any, error) {
	return jsonvalue.MapErr(v, func(leaf any) (any, error) {
		if t, ok := leaf.(*assert.Template); ok {
			return t.Eval(env)
		}
		return leaf, nil
	})
}

// usesName reports whether a template in v refers to name.
func usesName(v any, name string) bool {
	return jsonvalue.Any(v, func(leaf any) bool {
		t, ok := leaf.(*assert.Template)
		return ok && t.Uses(name)
	})
}
