package battery

import (
	"fmt"
	"sort"
	"time"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// concurrent repeats a same-key fan-out until a double execution is caught or the budget is
// spent (and, when --rounds is given, the rounds are done): the budget bounds time, not a round
// count, since a narrow check-then-act window is caught by many rounds, not by a few. Only a
// round whose copies overlapped is evidence.
func (b *Battery) concurrent(t toolset.ToolInfo, args map[string]any) *Cell {
	burst := scenariogen.Step{ID: "burst", CallTool: t.Name, Args: args, Fanout: b.Opts.Fanout, Expect: "any"}
	steps := []scenariogen.Step{burst}
	if len(b.OneCall) > 0 {
		steps = append(b.Snap.AroundOne(burst), b.Snap.BurstAsserts(b.OneCall)...)
	}
	s := b.NewPlan(t, Concurrent, fmt.Sprintf("a burst of %d copies of one key executes once", b.Opts.Fanout), steps...)
	s.Comment = fmt.Sprintf("%d copies of one call with one key, released together, in every trial: one executes, the others replay or get a conflict.", b.Opts.Fanout)
	s.Executions = b.once(t)
	c := newCell(s)
	var r rounds
	deadline := time.Now().Add(b.Opts.Budget)
	for (b.Opts.Rounds == 0 || c.Rounds < b.Opts.Rounds) && (c.Rounds == 0 || time.Now().Before(deadline)) && c.Rounds < maxRounds && b.Ctx.Err() == nil {
		if cc := b.round(s, c, &r); cc != nil {
			return cc
		}
	}
	// Saved, the scenario runs as many rounds as check did: run then catches what check caught
	// about as often.
	s.Trials = savedRounds(c.Rounds)
	b.burstVerdict(t, s, c, &r)
	return c
}

// maxRounds bounds the rounds of one cell whatever the budget, so a fast server cannot make the
// history of one cell grow without end.
const maxRounds = 100000

// savedRounds is the trials of a saved concurrent scenario: the rounds check ran, at least 20
// (what a budget-bound check runs on a slow server is still worth repeating) and at most 1000.
func savedRounds(n int) int { return min(max(n, 20), 1000) }

// rounds is what the concurrent check's rounds showed so far.
type rounds struct {
	spreads                                                                []float64
	last                                                                   *result.ScenarioResult
	okCopies, flightWrong, wrongStatus, byState, answersDiffered, unproven int
}

// round runs one fan-out of the concurrent check and tallies it in c and r; it returns the cell
// when the round decided it (a double execution caught).
func (b *Battery) round(s *rig.Plan, c *Cell, r *rounds) *Cell {
	s.Trials = 1
	res, cc := b.outcome(s, "")
	if res != nil {
		r.last = res
	}
	c.Rounds++
	if res != nil {
		c.Overlapped += res.Overlapped
		r.spreads = append(r.spreads, res.SpreadsUS...)
	}
	n, why := b.Snap.Burst(explain.Trial(res), b.OneCall)
	// The declared effects held: they counted one execution in this round, which answers
	// without an id cannot show.
	counted := s.Effects != "" && len(s.EffectsLines) == 0 && res != nil
	if res != nil && noID(res) && n != 1 && !counted {
		r.unproven++
	}
	switch {
	case n > 1 && cc != nil && cc.Status == matrix.Fail:
		// The answers caught it too: both are evidence, the state first.
		cc.lead(state(b.Snap.Tools), why)
		cc.twice = true
	case n > 1:
		cc = &Cell{Check: Concurrent, Scenario: s.Spec, plan: s, Status: matrix.Fail, Evidence: matrix.Evidences{state(b.Snap.Tools)}, Reason: why, twice: true}
		cc.Details = details(res, explain.Trial(res))
	case n == 1:
		r.byState++
		if res != nil && noID(res) && r.byState == 1 {
			stateDecidesBecause(s.Spec, "burst", noIDComment)
		}
		if f, ok := b.Snap.MintedKey(explain.Trial(res), "burst"); ok && cc != nil && cc.Status == matrix.Fail && cc.Evidence.Only(matrix.EvidenceAnswers) {
			cc.Evidence = append(cc.Evidence, state(b.Snap.Tools))
			cc.Reason += "; a copy answered with a new " + f.String() + " that no other answer carried: " + mintedWhy(b.Snap.Tools)
		} else if cc != nil && cc.Status == matrix.Fail && cc.Evidence.Only(matrix.EvidenceAnswers) && res.Metrics.DuplicateExecutions > 0 {
			if r.answersDiffered == 0 {
				stateDecides(s.Spec, "burst")
			}
			r.answersDiffered++
			cc = nil
		}
	}
	if cc == nil && len(s.EffectsLines) > 0 {
		// The declared effects counted another number of executions in this round: proof
		// enough, so the rounds stop here (each further round is more rows in the user's
		// database).
		cc = &Cell{Check: Concurrent, Scenario: s.Spec, plan: s, Status: matrix.Fail, Evidence: matrix.Evidences{effects}, Reason: effectsCounted(s), twice: true}
		cc.Details = append(append([]string(nil), s.EffectsLines...), details(res, explain.Trial(res))...)
	}
	if cc == nil && len(s.SinkNames) > 0 {
		cc = &Cell{Check: Concurrent, Scenario: s.Spec, plan: s, Status: matrix.Fail, Evidence: matrix.Evidences{sinks(s.SinkNames)}, Reason: sinksHeard(s)}
		cc.Details = append(append([]string(nil), s.SinkLines...), details(res, explain.Trial(res))...)
	}
	if cc != nil {
		cc.Rounds, cc.Overlapped = c.Rounds, c.Overlapped
		cc.SpreadP50US, cc.SpreadMaxUS = quantiles(r.spreads)
		s.Trials = savedRounds(c.Rounds)
		if cc.Status == matrix.Fail && cc.Reason != "" {
			if b.Opts.Rounds > 0 {
				cc.Reason = fmt.Sprintf("round %d of %d: %s", c.Rounds, b.Opts.Rounds, cc.Reason)
			} else {
				cc.Reason = fmt.Sprintf("round %d: %s", c.Rounds, cc.Reason)
			}
		}
		return cc
	}
	for _, call := range explain.Calls(explain.Trial(res), "burst") {
		switch {
		case call.Outcome == outcome.OK:
			r.okCopies++
		case call.Outcome == outcome.Fail && call.Status != 0 && b.prof.Flight != 0 && call.Status != b.prof.Flight:
			r.flightWrong++
			r.wrongStatus = call.Status
		}
	}
	return nil
}

// burstVerdict decides the concurrent cell c after rounds that caught no double execution.
func (b *Battery) burstVerdict(t toolset.ToolInfo, s *rig.Plan, c *Cell, r *rounds) {
	c.SpreadP50US, c.SpreadMaxUS = quantiles(r.spreads)
	c.Evidence = byAnswers()
	stats := fmt.Sprintf("%d rounds, %d overlapped, spread p50 %.0fµs max %.0fµs", c.Rounds, c.Overlapped, c.SpreadP50US, c.SpreadMaxUS)
	switch {
	case t.Natural && r.byState > 0 && c.Overlapped > 0:
		c.Status, c.Evidence = matrix.Pass, matrix.Evidences{state(b.Snap.Tools)}
		c.Reason = fmt.Sprintf("idempotent by nature; in %d round(s) the burst changed the state as one call changes it: %s", r.byState, stats)
	case t.Natural:
		c.Status, c.Reason = matrix.Inconclusive, b.noEvidence()+"; "+stats
	case r.okCopies == 0:
		c.Status, c.Reason = matrix.Inconclusive, "no copy succeeded in "+stats
	case c.Overlapped == 0:
		c.Status, c.Reason = matrix.Inconclusive, "no round overlapped (every answer began before the last copy left), so none is evidence about races: "+stats
	case r.flightWrong > 0:
		c.Status, c.Evidence = matrix.Warn, byStatus()
		c.Reason = fmt.Sprintf("one execution per key, but duplicates in flight got %d; the %s profile expects %d: %s", r.wrongStatus, b.prof.Name, b.prof.Flight, stats)
	case r.unproven > 0:
		c.Status, c.Reason = matrix.Inconclusive, fmt.Sprintf("in %d round(s) %s: %s", r.unproven, noIDReason, stats)
	case r.answersDiffered > 0:
		c.Status, c.Evidence = matrix.Warn, matrix.Evidences{state(b.Snap.Tools), overruledAnswers}
		c.Reason = fmt.Sprintf("the state changed as one call changes it in every round, but in %d round(s) copies answered differently, not as replays (the server deduplicates by content): %s", r.answersDiffered, stats)
	default:
		c.Status, c.Reason = matrix.Pass, "one execution per key: "+stats
		if r.byState > 0 {
			c.Evidence = c.Evidence.Lead(state(b.Snap.Tools))
			c.Reason = fmt.Sprintf("in %d round(s) the state changed as one call changes it, and the answers show one execution per key: %s", r.byState, stats)
			if b.contentDedup {
				// Its retries answered like second executions: the saved burst's copies may
				// too, so there the state decides, as it did for the retries.
				stateDecides(s.Spec, "burst")
			}
		}
	}
	if c.Status != matrix.Pass && !t.Natural && r.last != nil {
		c.Details = details(r.last, explain.Trial(r.last))
	}
}

func quantiles(xs []float64) (p50, maxv float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2], s[len(s)-1]
}
