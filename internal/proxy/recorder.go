package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/proxy/fault"
	"github.com/idemtest/idemtest/internal/redact"
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
	// RedactHeaders are more HTTP headers, besides those redact.CredentialHeader names, whose
	// values are credentials: the values the proxy sees in them are hidden in the calls it returns and the
	// trace, also where a server echoes them in an answer.
	RedactHeaders []string
	// Log receives a line for each note as it is made (a message dropped at the line cap);
	// may be nil.
	Log io.Writer
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
	notes    []string
	dropped  int // notes left out past maxNotes
	// secrets are the credential header values seen; hidden counts them.
	secrets redact.Secrets
	hidden  int
}

// maxNotes bounds the notes a recorder keeps; the rest are counted.
const maxNotes = 100

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
	Outcome  outcome.Outcome
	Status   int
	Replayed bool
	Result   json.RawMessage
	Error    string
	// Truncated is an answer too long to keep (over the proxy's body cap): Result is empty.
	Truncated bool
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

// SeeHeaders notes the values of the credential headers in h, to be hidden wherever they appear
// in what the recorder returns: those run hides too (redact.CredentialHeader: Authorization,
// Cookie, X-Api-Key, and every header named like a secret, such as X-Auth-Token, but not the
// header that carries the idempotency key), and those of Options.RedactHeaders.
func (r *Recorder) SeeHeaders(h http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, values := range h {
		named := slices.ContainsFunc(r.opts.RedactHeaders, func(n string) bool { return strings.EqualFold(n, name) })
		// The key's own header (X-Idempotency-Token) carries the key the trace records.
		if !named && (!redact.CredentialHeader(name) || strings.EqualFold(name, r.opts.Key.Header)) {
			continue
		}
		for _, v := range values {
			r.secrets.AddHeader(name, v)
			r.hidden++
		}
	}
}

// Note records something the verdict should say about the session that is no call (a message
// the proxy dropped), and writes it to Options.Log.
func (r *Recorder) Note(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts.Log != nil {
		fmt.Fprintf(r.opts.Log, "idemtest proxy: %s\n", msg)
	}
	if len(r.notes) < maxNotes {
		r.notes = append(r.notes, msg)
		return
	}
	r.dropped++
}

// Notes returns the notes recorded so far, the last saying how many more were left out.
func (r *Recorder) Notes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.notes)
	if r.dropped > 0 {
		out = append(out, fmt.Sprintf("and %d more notes like these", r.dropped))
	}
	return out
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
	c.ResultTruncated = a.Truncated
	c.DurationUS = time.Since(p.start).Microseconds()
	if answered && (p.Fault.Kind == fault.LoseResponse || p.Fault.Kind == fault.Timeout) {
		c.Outcome = outcome.Info
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
		r.finish(p, Answer{Outcome: outcome.Info, Error: msg}, false)
	}
	r.mu.Lock()
	calls := slices.Clone(r.calls)
	for i := range calls {
		// Decided now: a tools/list answer may have come after the call.
		calls[i].Mutating = r.mutating(calls[i].Tool)
	}
	var red *redact.Redactor
	if r.hidden > 0 {
		red = redact.New(&r.secrets)
	}
	r.mu.Unlock()
	sort.Slice(calls, func(i, j int) bool { return calls[i].Seq < calls[j].Seq })
	if red != nil {
		for i := range calls {
			hide(red, &calls[i])
		}
	}
	if r.opts.Trace != nil {
		for _, c := range calls {
			if err := r.opts.Trace.Write(trace.Bound(c)); err != nil {
				return calls, err
			}
		}
	}
	return calls, nil
}

// hide replaces the secrets in what a call recorded. JSON whose text a secret spans in a way
// that breaks it (a number, a key) is kept as a string.
func hide(red *redact.Redactor, c *trace.Call) {
	for _, raw := range []*json.RawMessage{&c.Args, &c.Result} {
		if len(*raw) == 0 {
			continue
		}
		s := red.String(string(*raw))
		if s == string(*raw) {
			continue
		}
		if !json.Valid([]byte(s)) {
			b, _ := json.Marshal(s)
			s = string(b)
		}
		*raw = json.RawMessage(s)
	}
	c.Error, c.Key, c.Tool = red.String(c.Error), red.String(c.Key), red.String(c.Tool)
}
