package audit

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
	"github.com/idemtest/idemtest/internal/trace"
)

// Call is one tool call seen in production: the trace format's call (tool, arguments, key and
// where it travels, outcome, status, replay marker, answer) with where it was recorded.
type Call struct {
	trace.Call
	// Session is the conversation or MCP session the call belongs to, "" when unknown.
	Session string
	// Start is when the call began.
	Start time.Time
	// TraceID and SpanID are the span's ids (hex), empty for idemtest's own traces.
	TraceID, SpanID string
	// Where is the input file and line the call was read from.
	Where string
	// Conflict marks a duplicate refused while the first was in flight (409).
	Conflict bool
	// Hidden marks a call whose answer the caller never saw (a fault idemtest injected): the
	// outcome is the server's, and a retry of it must reuse its key.
	Hidden bool
	// ArgsKnown says whether the span carried the call's arguments (HTTP server spans do not).
	ArgsKnown bool
	// ExecKnown says that Executions counts the call's execution spans (Mapping.ExecutionSpan):
	// the call executed that many times whatever its answer; otherwise its answer decides.
	ExecKnown  bool
	Executions int
}

// Kind names one kind of finding; the ids are stable (JSON, JUnit).
type Kind string

const (
	// DoubleExecution: one key executed twice within its lifetime.
	DoubleExecution Kind = "double-execution"
	// FreshKeyRetry: a call that failed or timed out was retried with the same arguments under
	// another key: a real second execution.
	FreshKeyRetry Kind = "fresh-key-retry"
	// KeylessMutating: calls of a mutating tool without a key.
	KeylessMutating Kind = "keyless-mutating"
	// KeySharedSessions: one key used by two sessions.
	KeySharedSessions Kind = "key-shared-sessions"
	// KeySharedArgs: one key used for two different argument sets.
	KeySharedArgs Kind = "key-shared-args"
	// ExpiryCollision: a key executed again later than its lifetime (--ttl).
	ExpiryCollision Kind = "expiry-collision"
	// HitRate: the idempotency hit rate is over --max-hit-rate.
	HitRate Kind = "hit-rate"
	// ConflictRate: the concurrent conflict rate is over --max-conflict-rate.
	ConflictRate Kind = "conflict-rate"
)

// Kinds lists every kind in report order.
var Kinds = []Kind{DoubleExecution, FreshKeyRetry, KeylessMutating, KeySharedSessions, KeySharedArgs, ExpiryCollision, HitRate, ConflictRate}

// Ref points at one call of a finding.
type Ref struct {
	TraceID string    `json:"trace_id,omitempty"`
	SpanID  string    `json:"span_id,omitempty"`
	Session string    `json:"session,omitempty"`
	Key     string    `json:"key,omitempty"`
	At      time.Time `json:"at"`
	Where   string    `json:"where"`
}

// Finding is one thing the audit noticed.
type Finding struct {
	Kind Kind `json:"kind"`
	// Violation is set when the finding fails the audit (exit 1).
	Violation bool   `json:"violation"`
	Tool      string `json:"tool,omitempty"`
	Key       string `json:"key,omitempty"`
	// Count is how many times it happened: the executions of a key, the keyless calls of a tool.
	Count   int    `json:"count"`
	Message string `json:"message"`
	Calls   []Ref  `json:"calls"`
}

// Options tune the audit.
type Options struct {
	// TTL is the keys' lifetime; a key executed again later than it is an expiry collision, not
	// a double execution. 0: keys never expire.
	TTL time.Duration
	// Window is how long a key is remembered after its last call: memory follows the keys inside
	// it. 0 is twice the TTL, or for ever without a TTL.
	Window time.Duration
	// MaxHitRate and MaxConflictRate are the thresholds (fractions); a negative one is off.
	MaxHitRate, MaxConflictRate float64
	// Mutating names tools that must carry a key even when no call of theirs has one.
	Mutating []string
	// Natural names tools idempotent by nature (a set, an upsert): executing one twice under
	// a key leaves what one execution leaves, so it is counted but is no double execution.
	Natural []string
	// MaxFindings bounds the findings kept per tool and kind (the counts go on); 0 is 20.
	MaxFindings int
}

// Auditor judges calls one at a time. It is not safe for concurrent use.
type Auditor struct {
	opts   Options
	window time.Duration
	keys   map[string]*keyState
	sigs   map[string][]*attempt
	tools  map[string]*ToolStats
	mins   map[int64]*Minute
	found  []Finding
	kept   map[string]int // findings kept per tool and kind
	seen   int
	mark   time.Time // the latest call start seen
	swept  time.Time
	peak   int
	report *Report
}

// keyState is what the audit remembers of one key of one tool.
type keyState struct {
	session, args string
	argsKnown     bool
	// first is the first execution of the key's current lifetime; execs counts them.
	first    *Ref
	firstRes uint64
	execs    int
	// finding is the index + 1 of the key's double-execution finding, 0 for none, -1 when it
	// was counted but not kept.
	finding int
	last    time.Time
	sharedS bool
	sharedA bool
}

// attempt is a keyed call remembered for the fresh-key rule.
type attempt struct {
	key      string
	ok       bool
	outcome  outcome.Outcome
	status   int
	hidden   bool
	ref      Ref
	reported bool
}

// ToolStats are one tool's numbers.
type ToolStats struct {
	Tool       string `json:"tool"`
	Calls      int    `json:"calls"`
	Keyed      int    `json:"keyed"`
	Keyless    int    `json:"keyless"`
	Executions int    `json:"executions"`
	Replays    int    `json:"replays"`
	Conflicts  int    `json:"conflicts"`
	Failed     int    `json:"failed"`
	// HitRate and ConflictRate are over the keyed calls.
	HitRate      float64      `json:"hit_rate"`
	ConflictRate float64      `json:"conflict_rate"`
	Findings     map[Kind]int `json:"findings"`
	mutating     bool
	natural      bool
	keyless      []Ref
}

// Minute is the rates of one minute (by call start).
type Minute struct {
	At        time.Time `json:"at"`
	Keyed     int       `json:"keyed"`
	Replays   int       `json:"replays"`
	Conflicts int       `json:"conflicts"`
}

// New returns an auditor.
func New(opts Options) *Auditor {
	if opts.MaxFindings <= 0 {
		opts.MaxFindings = 20
	}
	w := opts.Window
	if w == 0 {
		w = 2 * opts.TTL
	}
	a := &Auditor{opts: opts, window: w, keys: map[string]*keyState{}, sigs: map[string][]*attempt{},
		tools: map[string]*ToolStats{}, mins: map[int64]*Minute{}, kept: map[string]int{}}
	for _, t := range opts.Mutating {
		a.tool(t).mutating = true
	}
	for _, t := range opts.Natural {
		a.tool(t).natural = true
	}
	return a
}

func (a *Auditor) tool(name string) *ToolStats {
	t := a.tools[name]
	if t == nil {
		t = &ToolStats{Tool: name, Findings: map[Kind]int{}}
		a.tools[name] = t
	}
	return t
}

// add records a finding of t, kept while under MaxFindings for its tool and kind, and returns
// its index + 1 (0 when it was only counted).
func (a *Auditor) add(t *ToolStats, f Finding) int {
	t.Findings[f.Kind]++
	k := t.Tool + "\x00" + string(f.Kind)
	if a.kept[k] >= a.opts.MaxFindings {
		return 0
	}
	a.kept[k]++
	a.found = append(a.found, f)
	return len(a.found)
}

func ref(c Call) Ref {
	return Ref{TraceID: c.TraceID, SpanID: c.SpanID, Session: c.Session, Key: c.Key, At: c.Start.UTC(), Where: c.Where}
}

func hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// Add judges one call. Calls may come in any order within the window; Add keeps no reference
// to c.
func (a *Auditor) Add(c Call) error {
	a.seen++
	if c.Start.After(a.mark) {
		a.mark = c.Start
	}
	t := a.tool(c.Tool)
	t.Calls++
	if c.Mutating {
		t.mutating = true
	}
	if c.Outcome != outcome.OK {
		t.Failed++
	}
	if c.Key == "" {
		t.Keyless++
		if len(t.keyless) < a.opts.MaxFindings {
			t.keyless = append(t.keyless, ref(c))
		}
		a.sweep()
		return nil
	}
	t.mutating = true
	t.Keyed++
	m := a.minute(c.Start)
	m.Keyed++
	if c.Conflict {
		t.Conflicts++
		m.Conflicts++
	}
	// The arguments are decoded and made canonical once per call.
	var sig, args string
	if c.ArgsKnown {
		sig, args = agentverdict.Signature(c.Call, nil)
	}
	a.judgeKey(t, m, c, args)
	if c.ArgsKnown {
		a.judgeRetry(t, c, sig)
	}
	a.sweep()
	return nil
}

func (a *Auditor) minute(at time.Time) *Minute {
	k := at.Unix() / 60
	m := a.mins[k]
	if m == nil {
		m = &Minute{At: time.Unix(k*60, 0).UTC()}
		a.mins[k] = m
	}
	return m
}

// judgeKey applies §8 to c's key: an ok answer is a replay when marked or JSON-equal to the
// key's first execution; any other ok answer is an execution, and a second one within the
// key's lifetime is a double execution.
func (a *Auditor) judgeKey(t *ToolStats, m *Minute, c Call, args string) {
	id := c.Tool + "\x00" + c.Key
	ks := a.keys[id]
	if ks == nil {
		ks = &keyState{session: c.Session, args: args, argsKnown: c.ArgsKnown}
		a.keys[id] = ks
	}
	if c.Start.After(ks.last) {
		ks.last = c.Start
	}
	if c.Session != "" && ks.session == "" {
		ks.session = c.Session
	}
	if c.Session != "" && ks.session != c.Session && !ks.sharedS {
		ks.sharedS = true
		a.add(t, Finding{Kind: KeySharedSessions, Tool: c.Tool, Key: c.Key, Count: 2, Calls: []Ref{ref(c)},
			Message: fmt.Sprintf("key %q of %s is used by two sessions (%q and %q): keys must be scoped per caller", c.Key, c.Tool, ks.session, c.Session)})
	}
	if c.ArgsKnown && !ks.argsKnown {
		ks.args, ks.argsKnown = args, true
	} else if c.ArgsKnown && ks.args != args && !ks.sharedA {
		ks.sharedA = true
		a.add(t, Finding{Kind: KeySharedArgs, Tool: c.Tool, Key: c.Key, Count: 2, Calls: []Ref{ref(c)},
			Message: fmt.Sprintf("key %q of %s covers two different argument sets: %s and %s; the server must refuse the second (422), never execute or replay it", c.Key, c.Tool, clip(ks.args), clip(args))})
	}
	res := uint64(0)
	if len(c.Result) > 0 {
		res = hash(canonResult(c.Result))
	}
	if c.ExecKnown {
		// The execution spans decide: an ok answer without one is a replay; each one is an
		// execution, also under a failed answer (it charged, then failed).
		if c.Executions == 0 {
			if c.Outcome == outcome.OK {
				t.Replays++
				m.Replays++
			}
			return
		}
		for range c.Executions {
			a.execution(t, c, ks, res)
		}
		return
	}
	if c.Outcome != outcome.OK {
		return
	}
	if c.Replayed || ks.first != nil && res != 0 && res == ks.firstRes && ks.execs > 0 {
		t.Replays++
		m.Replays++
		return
	}
	a.execution(t, c, ks, res)
}

// execution counts one execution of c's key: a second within the key's lifetime is a double
// execution, one later than it an expiry collision.
func (a *Auditor) execution(t *ToolStats, c Call, ks *keyState, res uint64) {
	t.Executions++
	r := ref(c)
	if ks.first == nil {
		ks.first, ks.firstRes, ks.execs = &r, res, 1
		return
	}
	earlier, later := *ks.first, r
	if later.At.Before(earlier.At) {
		earlier, later = later, earlier
	}
	if a.opts.TTL > 0 && later.At.Sub(earlier.At) > a.opts.TTL {
		a.add(t, Finding{Kind: ExpiryCollision, Tool: c.Tool, Key: c.Key, Count: 2, Calls: []Ref{earlier, later},
			Message: fmt.Sprintf("key %q of %s executed again %s after its first execution, later than its lifetime %s: a retry outlived the key", c.Key, c.Tool, later.At.Sub(earlier.At).Round(time.Millisecond), a.opts.TTL)})
		// The second execution starts the key's next lifetime.
		ks.first, ks.firstRes, ks.execs, ks.finding = &later, res, 1, 0
		return
	}
	ks.execs++
	if ks.finding < 0 || t.natural {
		return
	}
	if ks.finding > 0 {
		f := &a.found[ks.finding-1]
		f.Count = ks.execs
		f.Message = doubleMessage(c.Tool, c.Key, ks.execs)
		if len(f.Calls) < a.opts.MaxFindings {
			f.Calls = append(f.Calls, r)
		}
		return
	}
	ks.finding = a.add(t, Finding{Kind: DoubleExecution, Violation: true, Tool: c.Tool, Key: c.Key, Count: 2,
		Calls: []Ref{earlier, later}, Message: doubleMessage(c.Tool, c.Key, 2)})
	if ks.finding == 0 {
		ks.finding = -1 // counted, not kept
	}
}

func doubleMessage(tool, key string, n int) string {
	return fmt.Sprintf("key %q of %s executed %d times: none of the answers after the first is a replay (no Idempotent-Replayed marker, not equal to the first answer)", key, tool, n)
}

// judgeRetry applies §10's rule (agentverdict's "would charge twice") to production: a call
// that did not succeed, retried in the same session with the same tool and arguments under
// another key.
func (a *Auditor) judgeRetry(t *ToolStats, c Call, sig string) {
	sig = c.Session + "\x00" + sig
	list := a.sigs[sig]
	now := &attempt{key: c.Key, ok: c.Outcome == outcome.OK && !c.Hidden, outcome: c.Outcome, status: c.Status, hidden: c.Hidden, ref: ref(c)}
	for _, p := range list {
		if p.key == c.Key {
			continue
		}
		first, retry := p, now
		if now.ref.At.Before(p.ref.At) {
			first, retry = now, p
		}
		if first.ok || first.reported {
			continue
		}
		first.reported = true
		a.add(t, Finding{Kind: FreshKeyRetry, Violation: true, Tool: c.Tool, Key: first.key, Count: 2,
			Calls:   []Ref{first.ref, retry.ref},
			Message: fmt.Sprintf("would charge twice: %s call (%s) was retried with key %q instead of %q", c.Tool, describe(first), retry.key, first.key)})
	}
	const keep = 4
	if len(list) >= keep {
		list = list[1:]
	}
	a.sigs[sig] = append(list, now)
}

func describe(p *attempt) string {
	switch {
	case p.hidden:
		return "its answer never reached the caller"
	case p.status != 0:
		return fmt.Sprintf("outcome %s, status %d", p.outcome, p.status)
	case p.outcome == outcome.Info:
		return "outcome unknown: timed out or no answer"
	}
	return "outcome " + string(p.outcome)
}

// sweep forgets the keys and attempts whose last call is older than the window before the
// latest call seen, at most once per tenth of the window: memory follows the window.
func (a *Auditor) sweep() {
	if n := len(a.keys) + len(a.sigs); n > a.peak {
		a.peak = n
	}
	if a.window <= 0 || a.mark.Sub(a.swept) < a.window/10 {
		return
	}
	a.swept = a.mark
	horizon := a.mark.Add(-a.window)
	for id, ks := range a.keys {
		if ks.last.Before(horizon) {
			delete(a.keys, id)
		}
	}
	for s, list := range a.sigs {
		if list[len(list)-1].ref.At.Before(horizon) {
			delete(a.sigs, s)
		}
	}
}

// Remembered is how many keys and retry signatures the auditor holds now, and the most it held.
func (a *Auditor) Remembered() (now, peak int) { return len(a.keys) + len(a.sigs), a.peak }

func clip(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// Report is the audit's result.
type Report struct {
	Calls        int          `json:"calls"`
	Keyed        int          `json:"keyed"`
	Executions   int          `json:"executions"`
	Replays      int          `json:"replays"`
	Conflicts    int          `json:"conflicts"`
	HitRate      float64      `json:"hit_rate"`
	ConflictRate float64      `json:"conflict_rate"`
	Violations   int          `json:"violations"`
	Thresholds   Thresholds   `json:"thresholds"`
	Window       ReportWindow `json:"window"`
	Tools        []ToolStats  `json:"tools"`
	Findings     []Finding    `json:"findings"`
	Minutes      []Minute     `json:"minutes"`
	// Interrupted is set when the input was not read to its end.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Thresholds are the rates that fail the audit, nil when off.
type Thresholds struct {
	MaxHitRate      *float64 `json:"max_hit_rate,omitempty"`
	MaxConflictRate *float64 `json:"max_conflict_rate,omitempty"`
}

// ReportWindow says what the audit remembered: the key lifetime, the window, and the most keys
// and retry signatures it held at once.
type ReportWindow struct {
	TTLSeconds    float64 `json:"ttl_seconds"`
	WindowSeconds float64 `json:"window_seconds"`
	PeakKeys      int     `json:"peak_keys"`
}

// Failed reports whether a finding is a violation.
func (r *Report) Failed() bool { return r.Violations > 0 }

func rate(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// Report returns the audit of every call added: findings per tool (keyless mutating calls and
// the thresholds are judged here, once every call is in). Call it after the last Add; a second
// call returns the same report.
func (a *Auditor) Report() *Report {
	if a.report != nil {
		return a.report
	}
	r := &Report{Findings: []Finding{}, Tools: []ToolStats{}, Minutes: []Minute{}}
	names := make([]string, 0, len(a.tools))
	for n := range a.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := a.tools[n]
		if t.Calls == 0 {
			continue
		}
		if t.mutating && t.Keyless > 0 {
			a.add(t, Finding{Kind: KeylessMutating, Tool: t.Tool, Count: t.Keyless, Calls: t.keyless,
				Message: fmt.Sprintf("%d of %d calls of %s carried no key, and %s is mutating: a retry of one of them executes again", t.Keyless, t.Calls, t.Tool, t.Tool)})
		}
		t.HitRate, t.ConflictRate = rate(t.Replays, t.Keyed), rate(t.Conflicts, t.Keyed)
		r.Calls += t.Calls
		r.Keyed += t.Keyed
		r.Executions += t.Executions
		r.Replays += t.Replays
		r.Conflicts += t.Conflicts
		r.Tools = append(r.Tools, *t)
	}
	r.HitRate, r.ConflictRate = rate(r.Replays, r.Keyed), rate(r.Conflicts, r.Keyed)
	all := &ToolStats{Findings: map[Kind]int{}}
	if a.opts.MaxHitRate >= 0 {
		v := a.opts.MaxHitRate
		r.Thresholds.MaxHitRate = &v
		if r.HitRate > v {
			a.add(all, Finding{Kind: HitRate, Violation: true, Count: r.Replays, Calls: []Ref{},
				Message: fmt.Sprintf("idempotency hit rate %s (%d of %d keyed calls answered from the stored result) is over the threshold %s (--max-hit-rate, audit.max_hit_rate): too many retries", pct(r.HitRate), r.Replays, r.Keyed, pct(v))})
		}
	}
	if a.opts.MaxConflictRate >= 0 {
		v := a.opts.MaxConflictRate
		r.Thresholds.MaxConflictRate = &v
		if r.ConflictRate > v {
			a.add(all, Finding{Kind: ConflictRate, Violation: true, Count: r.Conflicts, Calls: []Ref{},
				Message: fmt.Sprintf("concurrent conflict rate %s (%d of %d keyed calls refused while a duplicate was in flight) is over the threshold %s (--max-conflict-rate, audit.max_conflict_rate): a retry storm", pct(r.ConflictRate), r.Conflicts, r.Keyed, pct(v))})
		}
	}
	for _, f := range a.found {
		if f.Violation {
			r.Violations++
		}
		r.Findings = append(r.Findings, f)
	}
	for i := range r.Tools {
		for k, n := range r.Tools[i].Findings {
			if n > 0 && isViolation(k) {
				// Findings past MaxFindings count too.
				r.Violations += n - keptOf(a.found, r.Tools[i].Tool, k)
			}
		}
	}
	sort.SliceStable(r.Findings, func(i, j int) bool { return kindOrder(r.Findings[i].Kind) < kindOrder(r.Findings[j].Kind) })
	ks := make([]int64, 0, len(a.mins))
	for k := range a.mins {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	for _, k := range ks {
		r.Minutes = append(r.Minutes, *a.mins[k])
	}
	r.Window = ReportWindow{TTLSeconds: a.opts.TTL.Seconds(), WindowSeconds: a.window.Seconds(), PeakKeys: a.peak}
	a.report = r
	return r
}

func isViolation(k Kind) bool {
	return k == DoubleExecution || k == FreshKeyRetry || k == HitRate || k == ConflictRate
}

func keptOf(fs []Finding, tool string, k Kind) int {
	n := 0
	for _, f := range fs {
		if f.Tool == tool && f.Kind == k {
			n++
		}
	}
	return n
}

func kindOrder(k Kind) int {
	for i, x := range Kinds {
		if x == k {
			return i
		}
	}
	return len(Kinds)
}

// pct writes a rate as a percentage.
func pct(v float64) string {
	s := fmt.Sprintf("%.2f", v*100)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}

// Pct writes a rate as a percentage, as the reports do.
func Pct(v float64) string { return pct(v) }
