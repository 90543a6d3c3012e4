package proxy

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/proxy/fault"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/trace"
)

// Options say what the proxy records and which faults it injects.
type Options struct {
	// Key says where the agent puts its idempotency key.
	Key scenario.KeySpec
	// Mutating lists the mutating tools; nil decides from the tools/list answers seen (tools
	// without readOnlyHint), or for plain HTTP treats every tool as mutating.
	Mutating []string
	Faults   []fault.Fault
	// FaultRate is the probability that a mutating call not named by Faults gets a fault, of a
	// kind drawn from FaultKinds (default: lose-response); Seed makes the draws reproducible.
	FaultRate  float64
	FaultKinds []fault.Fault
	Seed       uint64
	// Hold bounds, over MCP, how long an answer a lose-response or timeout fault keeps from
	// the agent waits for the agent to give up: after it the agent gets a JSON-RPC "request
	// timed out" error, for clients whose own timeout is long. 0 waits until the agent cancels
	// or disconnects.
	Hold time.Duration
	// Trace receives every call when the recorder closes; may be nil.
	Trace *trace.Writer
}

// Recorder numbers the calls that pass through a proxy, decides their faults, and keeps what
// each call sent and got for the trace and the verdict. It is safe for concurrent use.
type Recorder struct {
	opts  Options
	start time.Time

	mu       sync.Mutex
	seq      int
	perTool  map[string]int
	readOnly map[string]bool
	rng      *rand.Rand
	pending  map[int]*Pending
	calls    []trace.Call
	faults   int
}

// Pending is a call that was sent and not yet answered.
type Pending struct {
	Seq   int
	Tool  string
	Fault fault.Fault
	start time.Time
	call  trace.Call
	// Cancelled is set when the agent gave up on the call.
	Cancelled bool
}

// Answer is what came back for a call, as the agent sees it.
type Answer struct {
	Outcome  endpoint.Outcome
	Status   int
	Replayed bool
	Result   json.RawMessage
	Error    string
}

// NewRecorder returns a recorder; every call's time counts from now.
func NewRecorder(opts Options) *Recorder {
	start := time.Now()
	if opts.Trace != nil {
		start = opts.Trace.Started()
	}
	return &Recorder{
		opts: opts, start: start, perTool: map[string]int{}, readOnly: map[string]bool{},
		rng: rand.New(rand.NewPCG(opts.Seed, 0x1de)), pending: map[int]*Pending{},
	}
}

// NeedsTools reports whether mutating tools are decided by tools/list answers.
func (r *Recorder) NeedsTools() bool { return r.opts.Mutating == nil }

// SeeTools notes what a tools/list answer said about each tool.
func (r *Recorder) SeeTools(readOnly map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for t, ro := range readOnly {
		r.readOnly[t] = ro
	}
}

func (r *Recorder) mutating(tool string) bool {
	if r.opts.Mutating != nil {
		return slices.Contains(r.opts.Mutating, tool)
	}
	return !r.readOnly[tool]
}

// Begin records that the agent sent a call and decides its fault.
func (r *Recorder) Begin(tool string, args json.RawMessage, key string) *Pending {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	r.perTool[tool]++
	n := r.perTool[tool]
	mut := r.mutating(tool)
	p := &Pending{Seq: r.seq, Tool: tool, start: now}
	for _, f := range r.opts.Faults {
		if f.Tool == tool && f.N == n {
			p.Fault = f
			break
		}
	}
	if p.Fault.Kind == "" && mut && r.opts.FaultRate > 0 && r.rng.Float64() < r.opts.FaultRate {
		p.Fault = fault.Fault{Kind: fault.LoseResponse}
		if k := r.opts.FaultKinds; len(k) == 1 {
			p.Fault = k[0]
		} else if len(k) > 1 {
			p.Fault = k[r.rng.IntN(len(k))]
		}
		p.Fault.Tool, p.Fault.N = tool, n
	}
	if p.Fault.Kind != "" {
		r.faults++
	}
	p.call = trace.Call{
		Seq: p.Seq, AtUS: now.Sub(r.start).Microseconds(), Tool: tool, Args: args, Key: key,
		KeyCarrier: r.opts.Key.String(), Mutating: mut,
	}
	if p.Fault.Kind != "" {
		p.call.Fault = p.Fault.String()
	}
	r.pending[p.Seq] = p
	return p
}

// Cancel notes that the agent gave up on a call.
func (r *Recorder) Cancel(p *Pending) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p.Cancelled = true
}

// Finish records a call's answer. A fault that hid the answer makes the outcome info; the
// server's answer is kept in the trace.
func (r *Recorder) Finish(p *Pending, a Answer) { r.finish(p, a, true) }

func (r *Recorder) finish(p *Pending, a Answer, answered bool) {
	r.mu.Lock()
	if _, ok := r.pending[p.Seq]; !ok {
		r.mu.Unlock()
		return
	}
	delete(r.pending, p.Seq)
	c := p.call
	c.Outcome, c.Status, c.Replayed, c.Result, c.Error = a.Outcome, a.Status, a.Replayed, a.Result, a.Error
	c.DurationUS = time.Since(p.start).Microseconds()
	if answered && (p.Fault.Kind == fault.LoseResponse || p.Fault.Kind == fault.Timeout) {
		c.Outcome = endpoint.Info
		c.Error = "response withheld from the agent (" + p.Fault.String() + "); the server answered " + string(a.Outcome)
	}
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// Close finishes the calls that never got an answer (outcome info), writes the trace, and
// returns every call in the order the agent sent them. The trace is written at the end so that
// its lines are in that order and "mutating" reflects every tools/list answer seen.
func (r *Recorder) Close() ([]trace.Call, error) {
	r.mu.Lock()
	open := make([]*Pending, 0, len(r.pending))
	for _, p := range r.pending {
		open = append(open, p)
	}
	r.mu.Unlock()
	sort.Slice(open, func(i, j int) bool { return open[i].Seq < open[j].Seq })
	for _, p := range open {
		msg := "no answer before the session ended"
		if p.Cancelled {
			msg = "cancelled by the agent; no answer before the session ended"
		}
		r.finish(p, Answer{Outcome: endpoint.Info, Error: msg}, false)
	}
	r.mu.Lock()
	calls := slices.Clone(r.calls)
	for i := range calls {
		// Decided now: a tools/list answer may have come after the call.
		calls[i].Mutating = r.mutating(calls[i].Tool)
	}
	r.mu.Unlock()
	sort.Slice(calls, func(i, j int) bool { return calls[i].Seq < calls[j].Seq })
	if r.opts.Trace != nil {
		for _, c := range calls {
			if err := r.opts.Trace.Write(c); err != nil {
				return calls, err
			}
		}
	}
	return calls, nil
}
