package sweep

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/stateview"
	"github.com/idemtest/idemtest/internal/toolset"
	"github.com/idemtest/idemtest/internal/trace"
)

// Options control a sweep.
type Options struct {
	// Endpoint names the endpoint of the base scenario the trace is replayed against.
	Endpoint string
	// FreshPerRun starts a new environment for every run: the config's services and sinks, and
	// an MCP server over stdio, so each run begins from the server's initial state.
	FreshPerRun bool
	// OnCell, when set, is told about each cell (run 0 included) as it is decided.
	OnCell func(c *Cell)
	// MaxRuns refuses a sweep of more runs than this with a *LimitError, before run 0 (0: no
	// limit). A sweep makes 1 + 3 runs per mutating call, each replaying the whole trace, so its
	// time grows with the square of the trace.
	MaxRuns int
	// OnPlan, when set, is told how many runs the sweep will make (and of how many mutating
	// calls) before the first one starts.
	OnPlan func(runs, mutating int)
}

// LimitError is a sweep of more runs than Options.MaxRuns allows.
type LimitError struct {
	Runs, Mutating, Max int
	// Recorded is set when the count is the trace's own (its calls marked mutating), before the
	// server was asked which tools mutate.
	Recorded bool
}

func (e *LimitError) Error() string {
	whose := ""
	if e.Recorded {
		whose = " (as the trace marks them)"
	}
	return fmt.Sprintf("this sweep would make %d runs (run 0, then %d faults for each of %d mutating calls%s, each run replaying the whole trace), over the limit of %d", e.Runs, len(Faults), e.Mutating, whose, e.Max)
}

// Runs is how many runs a sweep makes of a trace with mutating mutating calls: run 0 and one per
// fault per mutating call (a timeout run that had nothing in flight, or a duplicate run whose
// copies did not overlap, may be run again, up to faultTries times).
func Runs(mutating int) int { return 1 + len(Faults)*mutating }

// Cell is one run of the sweep: one fault on one call, or the clean run 0.
type Cell struct {
	// Seq is the trace's sequence number of the faulted call (0 for run 0).
	Seq    int           `json:"seq"`
	Tool   string        `json:"tool,omitempty"`
	Fault  string        `json:"fault"`
	Status matrix.Status `json:"status"`
	// Reason is one line: why the cell is what it is.
	Reason string `json:"reason"`
	// Details explain a cell that is not ✓: the structural differences and the call history.
	Details  []string      `json:"details,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// run is what ran: its scenario is built again when it is saved (Report.Specs), not kept,
	// so a sweep holds one run's scenario at a time.
	run run
}

// CallInfo is one call of the trace as the report lists it.
type CallInfo struct {
	Seq      int    `json:"seq"`
	Tool     string `json:"tool"`
	Mutating bool   `json:"mutating"`
	// RetryOf is the seq of the call whose key this one reused in the recording (0: none).
	RetryOf int `json:"retry_of,omitempty"`
}

// Report is a sweep's outcome.
type Report struct {
	Trace    string     `json:"trace"`
	Endpoint string     `json:"endpoint"`
	Faults   []string   `json:"faults"`
	Calls    []CallInfo `json:"calls"`
	Carried  []Carry    `json:"carried,omitempty"`
	// Evidence names what every run is compared on.
	Evidence []string `json:"evidence"`
	// Baseline is run 0; Cells are the faulty runs, call by call in fault order.
	Baseline    *Cell         `json:"baseline"`
	Cells       []*Cell       `json:"cells"`
	FreshPerRun bool          `json:"fresh_per_run"`
	Start       time.Time     `json:"start"`
	Duration    time.Duration `json:"duration_ns"`
	Interrupted bool          `json:"interrupted,omitempty"`
	// sweeper builds the cells' scenarios again for Specs.
	sweeper *sweeper
	// Regressions classifies the ✗ runs against --baseline (set by the command).
	Regressions *baseline.Result `json:"regressions,omitempty"`
}

// Failed reports whether any run diverged from run 0, or run 0 is no baseline: it executed a key
// twice, a call the recording saw succeed did not, or it could not run.
func (r *Report) Failed() bool {
	if r.Baseline != nil && r.Baseline.Status != matrix.Pass {
		return true
	}
	for _, c := range r.Cells {
		if c.Status == matrix.Fail {
			return true
		}
	}
	return false
}

// Specs returns the scenarios of the faulty runs, to save with --write: each built again from
// the plan, with the assertions that every call that succeeded in run 0 succeeds.
func (r *Report) Specs() []*scenariogen.Spec {
	if r.sweeper == nil {
		return nil
	}
	out := make([]*scenariogen.Spec, 0, len(r.Cells))
	for _, c := range r.Cells {
		if c.run.call != nil {
			out = append(out, r.sweeper.spec(c.run, true))
		}
	}
	return out
}

// sweeper holds what every run of one sweep shares.
type sweeper struct {
	ctx   context.Context
	base  *scenario.Scenario
	def   *scenario.Endpoint
	opts  Options
	plan  *plan
	name  string // the trace's file name, for scenario names
	env   *runner.Env
	reads []read
	// snapshots are the read-only tools without required arguments, read before and after.
	snapshots []string
	// ok0 holds the step ids of the calls that succeeded in run 0.
	ok0 map[string]bool
	// took is how long each call took in run 0, by step id.
	took map[string]time.Duration
}

// Run replays the trace's calls against the endpoint of base: once clean (run 0), then for each
// mutating call once with its response lost and retried with its key, once sent as a 2-way
// concurrent duplicate and once given up on after a client timeout and retried at once, each an ordinary scenario run by the runner; every run's evidence must
// equal run 0's.
func Run(ctx context.Context, base *scenario.Scenario, tracePath string, calls []trace.Call, opts Options) (*Report, error) {
	def := base.Endpoints[opts.Endpoint]
	if def == nil {
		return nil, fmt.Errorf("no endpoint %q", opts.Endpoint)
	}
	p, err := newPlan(ctx, calls, def.Key.Arg)
	if err != nil {
		return nil, err
	}
	// The trace's own marks bound the runs before anything starts; the server's list of tools
	// decides them below.
	if err := p.limit(opts.MaxRuns, true); err != nil {
		return nil, err
	}
	rep := &Report{Trace: tracePath, Endpoint: opts.Endpoint, Faults: Faults, Carried: p.carries, FreshPerRun: opts.FreshPerRun, Start: time.Now()}
	defer func() { rep.Duration = time.Since(rep.Start) }()
	s := &sweeper{ctx: ctx, base: base, def: def, opts: opts, plan: p, name: filepath.Base(tracePath)}
	rep.sweeper = s
	env, err := runner.Start(ctx, []*scenario.Scenario{base})
	if err != nil {
		return nil, err
	}
	defer func() {
		if s.env != nil {
			s.env.Close()
		}
	}()
	s.env = env
	if err := s.decide(); err != nil {
		return nil, err
	}
	if err := p.limit(opts.MaxRuns, false); err != nil {
		return nil, err
	}
	if opts.OnPlan != nil {
		opts.OnPlan(Runs(p.mutating()), p.mutating())
	}
	rep.Calls, rep.Evidence = s.callInfos(), s.evidence()

	base0 := s.execute(run{fault: Clean})
	baselineCell(base0)
	s.ok0 = map[string]bool{}
	for id, co := range base0.calls {
		s.ok0[id] = co.sent && co.outcome == outcome.OK
	}
	rep.Baseline = base0.cell
	s.tell(base0.cell)
	s.took = durations(base0)
	for _, pc := range p.calls {
		if !pc.mutating {
			continue
		}
		for _, f := range Faults {
			if ctx.Err() != nil {
				rep.Interrupted = true
				return rep, nil
			}
			got := s.faulty(base0, run{fault: f, call: pc, giveUp: s.giveUp(pc)})
			rep.Cells = append(rep.Cells, got.cell)
			s.tell(got.cell)
		}
	}
	if ctx.Err() != nil {
		rep.Interrupted = true
	}
	if len(rep.Cells) == 0 {
		return rep, errors.New("the trace has no mutating call to sweep")
	}
	return rep, nil
}

// mutating counts the plan's mutating calls.
func (p *plan) mutating() int {
	n := 0
	for _, pc := range p.calls {
		if pc.mutating {
			n++
		}
	}
	return n
}

// limit refuses a sweep of more than max runs (0: no limit).
func (p *plan) limit(max int, recorded bool) error {
	if n := p.mutating(); max > 0 && Runs(n) > max {
		return &LimitError{Runs: Runs(n), Mutating: n, Max: max, Recorded: recorded}
	}
	return nil
}

// faultTries bounds the runs of one cell: a run whose fault found nothing at once judges
// nothing (a timeout's call given up on was not in flight at the server when its retry came:
// answered before the client gave up, or never run; a duplicate's copies did not overlap: the
// first was answered before the last was sent), and on a busy machine the next run may land.
const faultTries = 8

// faulty runs r and decides its cell against run 0, running it again (a timeout run with the
// give-up the last run learnt) while the fault found nothing at once, until a run proves a catch
// (✗), proves the fault happened (✓) or faultTries runs are made (?).
func (s *sweeper) faulty(base0 *result, r run) *result {
	got := s.execute(r)
	compare(base0, got)
	n := 1
	for ; got.again && n < faultTries && s.ctx.Err() == nil; n++ {
		if r.fault == Timeout {
			r.giveUp = got.giveUp
		}
		got = s.execute(r)
		compare(base0, got)
	}
	switch {
	case n == 1 || !got.again:
	case r.fault == Duplicate:
		got.cell.Reason = fmt.Sprintf("the copies never overlapped in %d runs; in the last, %s", n, strings.TrimPrefix(got.cell.Reason, apart))
	default:
		got.cell.Reason += fmt.Sprintf(" (%d runs, none with the call in flight)", n)
	}
	return got
}

// durations are how long the calls of a run took, by step id (a call's first attempt).
func durations(r *result) map[string]time.Duration {
	out := map[string]time.Duration{}
	if r.trial == nil {
		return out
	}
	for _, c := range r.trial.Calls {
		if _, ok := out[c.Step]; !ok && c.Copy == 0 && c.Duration > 0 {
			out[c.Step] = c.Duration
		}
	}
	return out
}

// minGiveUp is the shortest client timeout: a request given up on sooner may be dropped before
// the server reads it, which tests nothing.
const minGiveUp = 20 * time.Millisecond

// defaultGiveUp is the client timeout when run 0 did not time the call.
const defaultGiveUp = 100 * time.Millisecond

// giveUp is the timeout fault's client timeout for a call: a quarter of what it took in run 0,
// so the retry arrives while the server still works on it, even on a loaded machine.
func (s *sweeper) giveUp(pc *planCall) time.Duration {
	d, ok := s.took[pc.id]
	if !ok {
		return defaultGiveUp
	}
	return min(max(d/4, minGiveUp), 5*time.Second).Round(time.Millisecond)
}

func (s *sweeper) tell(c *Cell) {
	if s.opts.OnCell != nil {
		s.opts.OnCell(c)
	}
}

// decide lists the endpoint's tools: which calls are mutating (as run decides it, else as the
// recording said) and which read-only tools show the state.
func (s *sweeper) decide() error {
	tools, err := s.env.Tools(s.ctx, s.base, s.def.Name)
	if err != nil && s.def.MCP != nil {
		return err
	}
	byName := map[string]toolset.ToolInfo{}
	for _, t := range tools {
		byName[t.Name] = t
	}
	for _, pc := range s.plan.calls {
		if t, ok := byName[pc.tool]; ok {
			pc.mutating = t.Mutating
		} else if s.def.Mutating != nil {
			pc.mutating = s.def.IsMutating(pc.tool)
		}
	}
	s.snapshots = stateview.SnapshotTools(tools)
	for i, tool := range s.snapshots {
		s.reads = append(s.reads, read{label: tool + " (state after the run)", before: fmt.Sprintf("state%d_before", i+1), after: fmt.Sprintf("state%d_after", i+1)})
	}
	for _, pc := range s.plan.calls {
		if pc.mutating {
			continue
		}
		r := read{label: fmt.Sprintf("call %d %s", pc.seq, pc.tool), after: pc.id}
		if !hasCarried(pc.args) {
			r.before = pc.id + "_before"
		}
		s.reads = append(s.reads, r)
	}
	return nil
}

func hasCarried(v any) bool {
	return jsonvalue.Any(v, func(leaf any) bool {
		_, ok := leaf.(*carried)
		return ok
	})
}

func (s *sweeper) callInfos() []CallInfo {
	seqOf := map[string]int{}
	var out []CallInfo
	for _, pc := range s.plan.calls {
		seqOf[pc.id] = pc.seq
		out = append(out, CallInfo{Seq: pc.seq, Tool: pc.tool, Mutating: pc.mutating, RetryOf: seqOf[pc.retryOf]})
	}
	return out
}

func (s *sweeper) evidence() []string {
	out := []string{"answers (exactly-once verdict)", "outcome of every call"}
	for _, r := range s.reads {
		out = append(out, "state: "+r.label)
	}
	if len(s.base.Sinks) > 0 {
		out = append(out, "sinks")
	}
	return out
}
