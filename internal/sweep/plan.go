package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/trace"
)

// The faults a sweep applies to each mutating call, and the clean run 0.
const (
	Clean        = "clean"
	LostResponse = "lost-response"
	Duplicate    = "duplicate"
	// Timeout: the client gives up on the call while the server still works on it and retries
	// it at once with its key, as an agent framework does after a client timeout.
	Timeout = "timeout"
)

// Faults lists the faults applied to each mutating call, in table order.
var Faults = []string{LostResponse, Duplicate, Timeout}

// Carry is one value carried over: the recording passed a value that call From's answer held at
// Path into call To's arguments at Arg, so every run passes its own answer's value there.
type Carry struct {
	From  int    `json:"from"`
	Path  string `json:"path"`
	To    int    `json:"to"`
	Arg   string `json:"arg"`
	Value string `json:"value"`
}

// sessioned marks a string argument that held the recording's session (a trace written by
// idemtest run, whose arguments used {{ session }}): every run puts its own session there, so
// the runs do not find each other's state. parts are the string's pieces around the session.
type sessioned struct{ parts []string }

// carried marks an argument filled in at run time from an earlier step's answer.
type carried struct {
	from string // step id of the answering call
	path []any  // in the answer: string keys and int indexes
}

// planCall is one call of the trace as every run replays it.
type planCall struct {
	seq      int
	id       string // step id: c<seq>
	tool     string
	mutating bool
	// args are the recorded arguments without the key; carried values are *carried.
	args map[string]any
	// retryOf is the step id of the earlier call whose key this call reused (a recorded retry).
	retryOf string
	// recorded is the call's outcome in the recording.
	recorded outcome.Outcome
}

// plan is a trace ready to be replayed.
type plan struct {
	calls   []*planCall
	carries []Carry
	// literals are the string values the recording's arguments and answers hold: a value the
	// server answers in a new run that is none of them was made up for that run (an id).
	literals map[string]bool
}

// TraceError is a trace that cannot be replayed: no calls, arguments that are not an object.
type TraceError struct{ Msg string }

func (e *TraceError) Error() string { return e.Msg }

// newPlan reads the calls of a trace in order. keyArg is the endpoint's key argument (removed
// from the recorded arguments: every run sends its own keys).
// It stops with ctx's error when ctx is done.
func newPlan(ctx context.Context, calls []trace.Call, keyArg string) (*plan, error) {
	if len(calls) == 0 {
		return nil, &TraceError{"the trace has no calls"}
	}
	sorted := append([]trace.Call(nil), calls...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	p := &plan{literals: map[string]bool{}}
	byKey := map[string]string{}
	// origin maps a string value to where an answer first showed it.
	type where struct {
		call *planCall
		path []any
	}
	origin := map[string]where{}
	known := map[string]bool{} // values the agent sent before they appeared in an answer
	sessions := recordedSessions(sorted)
	for i, tc := range sorted {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		sess := sessions[tc.Seq]
		pc := &planCall{seq: tc.Seq, id: fmt.Sprintf("c%d", tc.Seq), tool: tc.Tool, mutating: tc.Mutating, recorded: tc.Outcome}
		if tc.Seq < 0 {
			pc.id = fmt.Sprintf("c_%d", -tc.Seq)
		}
		args, err := decodeArgs(tc.Args)
		if err != nil {
			return nil, &TraceError{fmt.Sprintf("call seq %d (%s): args: %v", tc.Seq, tc.Tool, err)}
		}
		for _, name := range keyArgs(tc.KeyCarrier, keyArg) {
			delete(args, name)
		}
		if prev, ok := byKey[tc.Tool+"\x00"+tc.Key]; ok && tc.Key != "" {
			pc.retryOf = prev
		} else if tc.Key != "" {
			byKey[tc.Tool+"\x00"+tc.Key] = pc.id
		}
		args = jsonvalue.MapPath(args, func(path []any, v any) any {
			s, ok := v.(string)
			if !ok || s == "" {
				return v
			}
			if o, ok := origin[s]; ok && !known[s] {
				p.carries = append(p.carries, Carry{From: o.call.seq, Path: dotted(o.path), To: tc.Seq, Arg: dotted(path), Value: s})
				return &carried{from: o.call.id, path: o.path}
			}
			known[s] = true
			p.literals[s] = true
			if sess != "" && strings.Contains(s, sess) {
				return &sessioned{parts: strings.Split(s, sess)}
			}
			return v
		}).(map[string]any)
		pc.args = args
		p.calls = append(p.calls, pc)
		if tc.Outcome != "ok" || len(tc.Result) == 0 {
			continue
		}
		var res any
		if json.Unmarshal(tc.Result, &res) != nil {
			continue
		}
		jsonvalue.MapPath(res, func(path []any, v any) any {
			if s, ok := v.(string); ok {
				p.literals[s] = true
			}
			if s, ok := v.(string); ok && s != "" && !known[s] {
				if _, seen := origin[s]; !seen {
					origin[s] = where{pc, append([]any(nil), path...)}
				}
			}
			return v
		})
	}
	return p, nil
}

// runKey is a key idemtest run made: the trial's session, a dash and the call's index.
var runKey = regexp.MustCompile(`^(.{2,})-[0-9]+$`)

// recordedSessions finds, by seq, the session each call of a trace written by idemtest run was
// made in: its trial's keys are "<session>-<index>". A proxy's trace (no scenario) has none:
// its keys are the agent's.
func recordedSessions(calls []trace.Call) map[int]string {
	type trial struct {
		scenario string
		n        int
	}
	byTrial := map[trial]string{}
	for _, c := range calls {
		if m := runKey.FindStringSubmatch(c.Key); m != nil && c.Scenario != "" {
			byTrial[trial{c.Scenario, c.Trial}] = m[1]
		}
	}
	out := map[int]string{}
	for _, c := range calls {
		if sess := byTrial[trial{c.Scenario, c.Trial}]; sess != "" && c.Scenario != "" {
			out[c.Seq] = sess
		}
	}
	return out
}

// keyArgs are the argument names the key travelled in: the recorded carrier's and the
// endpoint's.
func keyArgs(carrier, endpointArg string) []string {
	var out []string
	if name, ok := strings.CutPrefix(carrier, "arg "); ok {
		out = append(out, name)
	}
	if endpointArg != "" {
		out = append(out, endpointArg)
	}
	return out
}

func decodeArgs(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// dotted writes a path as jsonvalue.Differ does: keys and indexes joined by dots.
func dotted(path []any) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// exprPath writes a path as an expression suffix: .refundId, ["a-b"], [0].
func exprPath(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch x := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", x)
		case string:
			if ident.MatchString(x) {
				b.WriteString("." + x)
			} else {
				b.WriteString("[" + strconv.Quote(x) + "]")
			}
		}
	}
	return b.String()
}

// run describes one run of the sweep: no fault (call 0), or one fault on one call.
type run struct {
	fault string
	call  *planCall // nil for the clean run
	// giveUp is the client timeout of the timeout fault.
	giveUp time.Duration
}

// retryID is the step id of the retry that follows a lost response.
func retryID(id string) string { return id + "_retry" }

// answerExpr is how a run reads the answer of step id: a lost answer through its retry, a
// duplicated call through its first successful copy.
func (r run) answerExpr(id string) string {
	if r.call == nil || r.call.id != id {
		return id + ".result"
	}
	switch r.fault {
	case LostResponse, Timeout:
		return retryID(id) + ".result"
	case Duplicate:
		return "(first(filter(" + id + ".calls, .ok)) ?? " + id + ".calls[0]).result"
	}
	return id + ".result"
}

// retryAttempts bounds the retry loop after a client timeout.
const retryAttempts = 6

// retryLoop is the framework's retry after a client timeout: the same key, again on an unknown
// outcome or any refusal (an in-progress conflict is a correct server's answer while the first
// call still works; a refusal of any other shape, an HTTP status, an MCP tool error, a JSON-RPC
// error or an error-shaped success, is retried alike, as check retries it), backing off from half
// the timeout but never sooner than the retry after completion (scenariogen.AfterCompletion), so
// its attempts span at least that schedule; the server's remaining work is shorter than the sum
// of the waits.
func (r run) retryLoop() *scenariogen.Retry {
	return &scenariogen.Retry{Attempts: retryAttempts, On: []string{"info", "fail"}, Backoff: r.backoff().String()}
}

// backoff is the first wait of the retry loop after a client timeout; each wait doubles.
func (r run) backoff() time.Duration {
	return max(r.giveUp/2, scenariogen.RefusedBackoff).Round(time.Millisecond)
}

// render turns carried markers into templates for this run.
func (r run) render(v any) any {
	return jsonvalue.Map(v, r.renderLeaf)
}

func (r run) renderLeaf(v any) any {
	switch x := v.(type) {
	case *carried:
		return "{{ " + r.answerExpr(x.from) + exprPath(x.path) + " }}"
	case *sessioned:
		var pieces []string
		for i, part := range x.parts {
			if i > 0 {
				pieces = append(pieces, "session")
			}
			pieces = append(pieces, quotedPieces(part)...)
		}
		return "{{ " + strings.Join(pieces, " + ") + " }}"
	case string:
		if assert.HasTemplate(x) {
			return literalTemplate(x)
		}
	}
	return v
}

// literalTemplate is a template that renders s as it is: a recorded argument holding {{ }} (an
// agent writing a template file) must not be evaluated. It is one expression of quoted pieces,
// each brace a piece of its own so that no }} ends the expression early.
func literalTemplate(s string) string {
	return "{{ " + strings.Join(quotedPieces(s), " + ") + " }}"
}

// quotedPieces are s as quoted strings, each brace a piece of its own.
func quotedPieces(s string) []string {
	var pieces []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '{' || s[i] == '}' {
			if i > start {
				pieces = append(pieces, strconv.Quote(s[start:i]))
			}
			pieces = append(pieces, strconv.Quote(s[i:i+1]))
			start = i + 1
		}
	}
	if start < len(s) {
		pieces = append(pieces, strconv.Quote(s[start:]))
	}
	return pieces
}

// steps are the run's call steps for the trace, without the state reads.
func (r run) steps(p *plan) []scenariogen.Step {
	var out []scenariogen.Step
	for _, pc := range p.calls {
		args, _ := r.render(pc.args).(map[string]any)
		st := scenariogen.Step{ID: pc.id, CallTool: pc.tool, Args: args, Expect: "any"}
		if pc.retryOf != "" {
			st.CallTool, st.RetryOf = "", pc.retryOf
		}
		if r.call != pc {
			out = append(out, st)
			continue
		}
		switch r.fault {
		case LostResponse:
			st.LoseResponse = true
			// The call completed: its retry is check's retry after completion, again on any
			// refusal.
			out = append(out, st, scenariogen.Step{ID: retryID(pc.id), RetryOf: pc.id, Expect: "any", Retry: scenariogen.AfterCompletion()})
		case Duplicate:
			st.Fanout = 2
			out = append(out, st)
		case Timeout:
			st.Timeout = r.giveUp.String()
			out = append(out, st, scenariogen.Step{ID: retryID(pc.id), RetryOf: pc.id, Expect: "any", Retry: r.retryLoop()})
		}
	}
	return out
}
