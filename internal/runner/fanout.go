package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
)

// fanout prepares every copy (own connection, bytes encoded), releases them together and
// records how far apart they left and whether they raced at all.
func (r *runner) fanout(ctx context.Context, st *trialState, step *scenario.Step, ep endpoint.Endpoint, def *scenario.Endpoint, req endpoint.Request) *result.Failure {
	n := step.Fanout
	opts := endpoint.FanoutOptions{Copies: n, Sync: step.Sync, StaggerMin: step.StaggerMin, StaggerMax: step.StaggerMax}
	// Each copy goes to its instance; single-packet's copies are streams of one connection, so
	// all of them go to one instance.
	sends := n
	if step.Sync == dispatch.SyncSinglePacket {
		sends = 1
	}
	targets, insts := st.spread.targets(ep, def, req.Key, sends)
	switch {
	case targets == nil:
	case sends == 1:
		ep = targets[0]
		for len(insts) < n {
			insts = append(insts, insts[0])
		}
	default:
		opts.Targets = targets
	}
	fo := endpoint.Fanout(ctx, ep, req, opts)
	if ctx.Err() != nil {
		return result.StepFailure(result.FailError, step, "interrupted")
	}
	if fo.Err != nil {
		// Not an answer of the tool: the copies never left, so the step cannot say anything.
		return result.StepFailure(result.FailError, step, fmt.Sprintf("%s: fan-out of %d not sent: %v", step.Tool, n, fo.Err))
	}
	out := assert.FanoutResult{Calls: make([]assert.CopyResult, n), SpreadUS: fo.SpreadUS, Overlapped: fo.Overlapped, Key: req.Key, Fanout: n}
	var firstSent time.Time
	for _, res := range fo.Results {
		if !res.Sent.IsZero() && (firstSent.IsZero() || res.Sent.Before(firstSent)) {
			firstSent = res.Sent
		}
	}
	since := func(t time.Time) *float64 {
		if t.IsZero() || firstSent.IsZero() {
			return nil
		}
		us := float64(t.Sub(firstSent).Nanoseconds()) / 1000
		return &us
	}
	for i, res := range fo.Results {
		var inst *endpoint.Instance
		if insts != nil {
			inst = insts[i]
		}
		r.record(st, step, i+1, 1, req.Key, res, inst)
		c := assert.CopyResult{CallResult: callResult(res, req.Key, 1), OffsetUS: float64(fo.Offsets[i].Nanoseconds()) / 1000}
		// When this copy left and when its answer began, from the first copy's release.
		c.ReleasedUS, c.AnsweredUS = since(res.Sent), since(res.Answered)
		out.Calls[i] = c
		switch res.Outcome {
		case outcome.OK:
			out.OK++
		case outcome.Fail:
			out.Fail++
		case outcome.Info:
			out.Info++
		}
		if res.Conflict {
			out.Conflict++
		}
	}
	st.mu.Lock()
	st.metrics.SpreadMaxUS = max(st.metrics.SpreadMaxUS, fo.SpreadUS)
	if len(st.res.SpreadsUS) < result.MaxSpreadSamples {
		st.res.SpreadsUS = append(st.res.SpreadsUS, fo.SpreadUS)
	}
	st.res.Fanouts++
	if fo.Overlapped {
		st.res.Overlapped++
	}
	st.mu.Unlock()
	st.env[step.ID] = out
	if step.Expect != outcome.Any {
		for i, res := range fo.Results {
			if res.Outcome != step.Expect {
				return result.StepFailure(result.FailExpect, step, fmt.Sprintf("%s: copy %d of %d: expected outcome %s, got %s%s", step.Tool, i+1, n, step.Expect, res.Outcome, describeResult(res)))
			}
		}
	}
	return nil
}
