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
	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
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
	// Trace receives each call as it completes (the calls still open when the recorder
	// closes, then); may be nil.
	Trace *trace.Writer
	// IgnoreArgs are the arguments (dotted paths) the verdict leaves out when it compares a
	// retry with its call (agentverdict.JudgeOptions.IgnoreArgs): the recorder digests each
	// call's arguments without them as the call completes.
	IgnoreArgs []string
	// RedactHeaders are more HTTP headers, besides those redact.CredentialHeader names, whose
	// values are credentials: the values the proxy sees in them are hidden in the calls it returns and the
	// trace, also where a server echoes them in an answer.
	RedactHeaders []string
	// Log receives a line for each note as it is made (a message dropped at the line cap);
	// may be nil.
	Log io.Writer
}

// Recorder numbers the calls that pass through a proxy and decides their faults. It writes each
// call to the trace as the call completes, with what it sent and got, and keeps of it only what
// the verdict reads (agentverdict.Call), so that its memory grows by a few hundred bytes per
// call, whatever the calls carry. It is safe for concurrent use.
type Recorder struct {
	opts    Options
	start   time.Time
	carrier string // opts.Key.String()

	mu       sync.Mutex
	seq      int
	perTool  map[string]int
	tools    map[string]string // each tool name once, shared by its calls
	readOnly map[string]bool
	rng      *rand.Rand
	pending  map[int]*Pending
	calls    agentverdict.Calls
	faults   int
	// held are calls that completed and wait, sorted by seq, for their trace line: until the
	// calls the agent sent before them complete and no tools/list that decides which tools
	// are mutating is in flight (listing), within maxHeld lines and maxHeldBytes.
	held      []trace.Call
	heldBytes int
	listing   int
	listGen   uint64
	// wmu orders the trace's writes; traceErr, under it, is its first error.
	wmu      sync.Mutex
	traceErr error
	notes    []string
	dropped  int // notes left out past maxNotes
	// secrets are the credential header values seen; hidden counts them.
	secrets redact.Secrets
	hidden  int
	// red hides the secrets seen when redHidden were counted (nil before the first).
	red       *redact.Redactor
	redHidden int
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
		opts: opts, start: start, carrier: opts.Key.String(), perTool: map[string]int{}, tools: map[string]string{}, readOnly: map[string]bool{},
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
	if t, ok := r.tools[tool]; ok {
		tool = t
	} else {
		r.tools[tool] = tool
	}
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
		KeyCarrier: r.carrier, Mutating: mut,
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

// SetTraceID records the W3C trace id the call carries upstream (the agent's traceparent, or
// the one the proxy gave it), so that the trace names the server's own trace of the call.
func (r *Recorder) SetTraceID(p *Pending, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p.call.TraceID = id
}

// Finish records a call's answer and writes the call to the trace. A fault that hid the answer
// makes the outcome info; the server's answer is kept in the trace.
func (r *Recorder) Finish(p *Pending, a Answer) { r.finish(p, a, true) }

func (r *Recorder) finish(p *Pending, a Answer, answered bool) {
	r.mu.Lock()
	if _, ok := r.pending[p.Seq]; !ok {
		r.mu.Unlock()
		return
	}
	c := p.call
	red := r.redactor()
	r.mu.Unlock()
	c.Outcome, c.Status, c.Replayed, c.Result, c.Error = a.Outcome, a.Status, a.Replayed, a.Result, a.Error
	c.ResultTruncated = a.Truncated
	c.DurationUS = time.Since(p.start).Microseconds()
	if answered && (p.Fault.Kind == fault.LoseResponse || p.Fault.Kind == fault.Timeout) {
		c.Outcome = outcome.Info
		c.Error = "response withheld from the agent (" + p.Fault.String() + "); the server answered " + string(a.Outcome)
	}
	// The digest is of what the agent sent; the secrets in what the verdict quotes are hidden
	// as it quotes them (Close), with every secret seen by then.
	var hideArgs func(string) string
	if red != nil {
		hideArgs = red.String
	}
	d := agentverdict.DigestHiding(c, r.opts.IgnoreArgs, hideArgs)

	r.mu.Lock()
	if _, ok := r.pending[p.Seq]; !ok {
		r.mu.Unlock()
		return
	}
	delete(r.pending, p.Seq)
	p.call = trace.Call{}
	r.calls.Add(d)
	if r.opts.Trace != nil {
		k := sort.Search(len(r.held), func(i int) bool { return r.held[i].Seq > c.Seq })
		r.held = slices.Insert(r.held, k, c)
		r.heldBytes += heldSize(c)
	}
	r.flush(false)
}

// maxHeld and maxHeldBytes bound the completed calls the recorder holds back from the trace to
// keep its lines in the agent's order: past them, the earliest are written.
const (
	maxHeld      = 1024
	maxHeldBytes = 16 << 20
)

func heldSize(c trace.Call) int { return len(c.Args) + len(c.Result) + len(c.Error) + len(c.Key) + 256 }

// flush writes the held calls that are due to the trace, all of them when all is set, and
// unlocks r.mu. Each line says whether its tool is mutating as the tools/list answers seen
// by then say, with the secrets seen by then hidden.
func (r *Recorder) flush(all bool) {
	first := -1 // the earliest call still open
	for seq := range r.pending {
		if first < 0 || seq < first {
			first = seq
		}
	}
	n := 0
	for n < len(r.held) {
		c := r.held[n]
		due := all || len(r.held)-n > maxHeld || r.heldBytes > maxHeldBytes ||
			r.listing == 0 && (first < 0 || c.Seq < first)
		if !due {
			break
		}
		r.heldBytes -= heldSize(c)
		n++
	}
	out := slices.Clone(r.held[:n])
	clear(r.held[:n])
	r.held = slices.Delete(r.held, 0, n)
	if len(r.held) == 0 {
		r.held = nil // let a long session's backing array go
	}
	red := r.redactor()
	for i := range out {
		out[i].Mutating = r.mutating(out[i].Tool)
	}
	r.wmu.Lock()
	r.mu.Unlock()
	defer r.wmu.Unlock()
	for _, c := range out {
		if red != nil {
			hide(red, &c)
		}
		if err := r.opts.Trace.Write(trace.Bound(c)); err != nil && r.traceErr == nil {
			r.traceErr = err
		}
	}
}

// SetListing says how many tools/list requests are in flight (gen orders the reports: an
// older one is ignored). Calls that complete meanwhile wait for their answers before they
// are traced, which decide whether their tools are mutating.
func (r *Recorder) SetListing(gen uint64, n int) {
	r.mu.Lock()
	if gen < r.listGen {
		r.mu.Unlock()
		return
	}
	r.listGen, r.listing = gen, n
	if r.opts.Trace == nil {
		r.mu.Unlock()
		return
	}
	r.flush(false)
}

// redactor hides the secrets seen so far; nil when there are none. r.mu is held.
func (r *Recorder) redactor() *redact.Redactor {
	if r.hidden == 0 {
		return nil
	}
	if r.red == nil || r.redHidden != r.hidden {
		r.red, r.redHidden = redact.New(&r.secrets), r.hidden
	}
	return r.red
}

// Close finishes the calls that never got an answer (outcome info), writes the calls still held
// to the trace, and returns what the verdict needs of every call, in the order the agent sent
// them, with the trace's first write error. The trace's lines are in the agent's order unless a
// call stayed open while more than maxHeld later calls completed.
func (r *Recorder) Close() (*agentverdict.Calls, error) {
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
	if r.opts.Trace != nil {
		r.flush(true)
		r.mu.Lock()
	}
	defer r.mu.Unlock()
	calls := r.calls
	r.calls = agentverdict.Calls{}
	// Decided now: a tools/list answer may have come after the call.
	calls.SetMutating(r.mutating)
	if red := r.redactor(); red != nil {
		calls.Hide = red.String
	}
	calls.Sort()
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return &calls, r.traceErr
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
