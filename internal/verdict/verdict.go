package verdict

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/idemtest/idemtest/internal/jsonvalue"
)

// Call is one answer idemtest saw to a call, in the order the trial made them: the fourth of a
// call's five shapes (result/doc.go). The runner builds it beside each result.Call, adding what
// only the verdict needs (the endpoint's compare.ignore, whether the call is exempt, whether a
// discarded answer was ok); Judge reads it. It is its own type so that verdict stays pure and
// imports nothing of idemtest's but jsonvalue.
type Call struct {
	// Key is the idempotency key; a call without one is not judged.
	Key string
	// Endpoint and Tool scope the key: a server keeps its keys per tool.
	Endpoint, Tool string
	// Step, Copy and Attempt say which call this was, for the explanation.
	Step          string
	Copy, Attempt int
	// Instance is the instance of an endpoint of several the call went to (from 1), 0 for an
	// endpoint of one. It does not scope the key: every instance must honour every key.
	Instance int
	// OK reports that the server's answer was a success, whether or not the agent heard it.
	OK bool
	// Lost marks an answer discarded by lose_response: idemtest read it, the agent did not.
	Lost bool
	// Replayed reports that the server marked the answer as a replay.
	Replayed bool
	// Answer is the decoded answer: JSON values, or the text when it is not JSON.
	Answer any
	// Ignore lists dotted paths (requestId, meta.at) left out of every comparison.
	Ignore []string
	// Args are the call's arguments: a value an answer merely echoes tells nothing about which
	// execution the answer came from.
	Args map[string]any
	// Exempt calls are not judged from their answers: a tool idempotent by nature, or a step
	// with verdict: off.
	Exempt bool
}

// Kind names a violation.
type Kind string

const (
	// DoubleExecution: one key got ok answers that are not replays of each other.
	DoubleExecution Kind = "double-execution"
	// ReplayDiffers: an answer marked as a replay is not the key's first answer.
	ReplayDiffers Kind = "replay-differs"
)

// Violation is a key that broke exactly-once.
type Violation struct {
	Kind                Kind
	Key, Endpoint, Tool string
	// First is the index, in the calls judged, of the key's first call.
	First int
	// Executions is how many times the key executed, as its answers tell (0 when idemtest did
	// not see the first execution's answer).
	Executions int
	// Answers are the answers in question: the first of each execution, or the first answer
	// and the replays that differ from it.
	Answers []Call
	// Differ lists the paths at which the first two answers differ.
	Differ []string
}

// Judgement is the verdict on one trial.
type Judgement struct {
	Violations []Violation
	// Replays counts the ok answers that were replays: marked, or JSON-equal to an earlier ok
	// answer to their key.
	Replays int
	// Duplicates counts the executions beyond the first, over every key.
	Duplicates int
	// Unprovable lists the keys whose equal answers carry no id: they are not counted as
	// replays, and the verdict could not judge them.
	Unprovable []Unprovable
}

// Judge decides, for every key of a trial, whether it executed exactly once (DESIGN §8). Only
// ok answers are evidence: an info answer is neither an execution nor its absence, and a fail
// answer did not execute.
func Judge(calls []Call) Judgement {
	order, byKey := groupByKey(calls)
	ev := toolEvidence(calls, order, byKey)
	var j Judgement
	for _, s := range order {
		j.judgeKey(calls, s, byKey[s], ev[toolOf{s.endpoint, s.tool}])
	}
	// By the step that first used the key; a double execution before a replay that differs.
	sort.SliceStable(j.Violations, func(a, b int) bool {
		va, vb := j.Violations[a], j.Violations[b]
		if va.First != vb.First {
			return va.First < vb.First
		}
		return va.Kind == DoubleExecution && vb.Kind != DoubleExecution
	})
	return j
}

// scope is what a key is judged within: the endpoint and tool it was sent to.
type scope struct{ endpoint, tool, key string }

// toolOf is one tool of one endpoint.
type toolOf struct{ endpoint, tool string }

// groupByKey returns the keyed calls' indexes per scope, and the scopes in the order of their
// first call.
func groupByKey(calls []Call) ([]scope, map[scope][]int) {
	var order []scope
	byKey := map[scope][]int{}
	for i, c := range calls {
		if c.Key == "" {
			continue
		}
		s := scope{c.Endpoint, c.Tool, c.Key}
		if _, ok := byKey[s]; !ok {
			order = append(order, s)
		}
		byKey[s] = append(byKey[s], i)
	}
	return order, byKey
}

// toolEvidence keeps, per tool, the first judged answer of each key: what minted tells
// server-minted values from echoes by.
func toolEvidence(calls []Call, order []scope, byKey map[scope][]int) map[toolOf]*evidence {
	ev := map[toolOf]*evidence{}
	for _, s := range order {
		for _, i := range byKey[s] {
			if calls[i].OK && !calls[i].Exempt {
				t := toolOf{s.endpoint, s.tool}
				if ev[t] == nil {
					ev[t] = &evidence{answers: map[string]map[string]string{}}
				}
				l := map[string]string{}
				leaves(jsonvalue.Without(calls[i].Answer, calls[i].Ignore), l)
				ev[t].keys = append(ev[t].keys, s.key)
				ev[t].answers[s.key] = l
				break
			}
		}
	}
	return ev
}

// judgeKey judges the calls idx of one key: counts its replays and adds its violations, or the
// key to Unprovable when its equal answers prove nothing.
func (j *Judgement) judgeKey(calls []Call, s scope, idx []int, ev *evidence) {
	var ok []int
	for _, i := range idx {
		if !calls[i].OK {
			continue
		}
		if calls[i].Exempt {
			if calls[i].Replayed {
				j.Replays++
			}
			continue
		}
		ok = append(ok, i)
	}
	if len(ok) == 0 {
		return
	}
	canon := make(map[int]string, len(ok))
	for _, i := range ok {
		canon[i] = jsonvalue.Canonical(jsonvalue.Without(calls[i].Answer, calls[i].Ignore))
	}
	// Unmarked answers are executions, one per distinct answer; they are compared with each
	// other only, so that the order of a fan-out's copies in the history does not matter.
	var execs, differs []int
	seen := map[string]bool{}
	marked, equal := 0, 0
	for _, i := range ok {
		switch {
		case calls[i].Replayed:
			marked++
		case seen[canon[i]]:
			equal++
		default:
			execs = append(execs, i)
			seen[canon[i]] = true
		}
	}
	j.Replays += marked
	// Equal unmarked answers are replays only when they carry something the server minted
	// for the execution; otherwise a server that ignores keys answers the same.
	if equal > 0 && marked == 0 && len(execs) == 1 {
		args := map[string]string{}
		leaves(calls[execs[0]].Args, args)
		args["(key)"] = jsonvalue.Canonical(s.key) // a server that echoes the key minted nothing
		if !ev.minted(s.key, ev.answers[s.key], args) {
			j.Unprovable = append(j.Unprovable, Unprovable{Key: s.key, Endpoint: s.endpoint, Tool: s.tool, First: idx[0], Calls: len(ok)})
			return
		}
	}
	j.Replays += equal
	// A marked replay must be the stored answer of an execution: the first ok answer when
	// idemtest saw none (its answer was lost unread). When the key executed twice, a replay
	// of either execution is explained by the double execution.
	ref := ok[0]
	if len(execs) > 0 {
		ref = execs[0]
	} else {
		seen[canon[ref]] = true
	}
	for _, i := range ok {
		if calls[i].Replayed && !seen[canon[i]] {
			differs = append(differs, i)
		}
	}
	if len(differs) > 0 {
		v := Violation{Kind: ReplayDiffers, Key: s.key, Endpoint: s.endpoint, Tool: s.tool, First: idx[0], Executions: len(execs),
			Answers: []Call{calls[ref]}, Differ: jsonvalue.Differ(jsonvalue.Without(calls[ref].Answer, calls[ref].Ignore), jsonvalue.Without(calls[differs[0]].Answer, calls[differs[0]].Ignore))}
		for _, i := range differs {
			v.Answers = append(v.Answers, calls[i])
		}
		j.Violations = append(j.Violations, v)
	}
	if len(execs) > 1 {
		v := Violation{Kind: DoubleExecution, Key: s.key, Endpoint: s.endpoint, Tool: s.tool, First: idx[0], Executions: len(execs)}
		for _, i := range execs {
			v.Answers = append(v.Answers, calls[i])
		}
		v.Differ = jsonvalue.Differ(jsonvalue.Without(calls[execs[0]].Answer, calls[execs[0]].Ignore), jsonvalue.Without(calls[execs[1]].Answer, calls[execs[1]].Ignore))
		j.Violations = append(j.Violations, v)
		j.Duplicates += len(execs) - 1
	}
}

// Message is the one-line statement of a violation.
func (v Violation) Message() string {
	if v.Kind == ReplayDiffers {
		if n := len(v.Answers) - 1; n > 1 {
			return fmt.Sprintf("key %s: %d replays differ from the first answer (%s)", v.Key, n, v.Tool)
		}
		return fmt.Sprintf("key %s: a replay differs from the first answer (%s)", v.Key, v.Tool)
	}
	return fmt.Sprintf("key %s executed %d times (%s)%s", v.Key, v.Executions, v.Tool, v.onInstances())
}

// instances lists the distinct instances the executions ran on, in the order they ran; nil
// for an endpoint of one instance.
func (v Violation) instances() []int {
	var out []int
	for _, a := range v.Answers {
		if a.Instance > 0 && !slices.Contains(out, a.Instance) {
			out = append(out, a.Instance)
		}
	}
	return out
}

// onInstances says where the executions ran, when the endpoint has several instances:
// ": on instance 1 and instance 2".
func (v Violation) onInstances() string {
	in := v.instances()
	switch len(in) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(": each on instance %d", in[0])
	}
	names := make([]string, len(in))
	for i, n := range in {
		names[i] = fmt.Sprintf("instance %d", n)
	}
	return ": on " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// Hint is a one-line guess at the server-side cause of a violation, from its kind and from how
// the executions came about: copies of one fan-out racing each other, or a call made again after
// the first had finished.
func (v Violation) Hint() string {
	switch {
	case v.Kind == ReplayDiffers:
		return "the server builds the answer again on replay: store the first answer (status and body) with the key and return it unchanged"
	case len(v.instances()) > 1 && v.concurrent():
		return "the instances do not share one atomic check-and-store: reserve the key in a store every instance uses (INSERT … ON CONFLICT DO NOTHING, SET NX), not in process memory or under a process-local lock"
	case len(v.instances()) > 1:
		return "the instances do not share their keys: one did not find the key another had stored; keep keys in a store every instance reads (Redis, the database), not in process memory"
	case v.concurrent():
		return "the server's check-and-store is not atomic: reserve the key (INSERT … ON CONFLICT DO NOTHING, SET NX) before executing, and answer 409 to a duplicate in flight"
	}
	return "the server did not find the key when the call came again: store each key's answer when the call completes (per caller and tool) and return it to every retry"
}

// concurrent reports whether every execution was a copy of one fan-out.
func (v Violation) concurrent() bool {
	for _, a := range v.Answers {
		if a.Copy == 0 || a.Step != v.Answers[0].Step {
			return false
		}
	}
	return len(v.Answers) > 1
}

// maxShown bounds the answers an explanation lists.
const maxShown = 4

// maxAnswer bounds the text of one answer in an explanation.
const maxAnswer = 240

// Explain shows the answers in question one under the other, labelled with their calls, and
// where they differ.
func (v Violation) Explain() []string { return v.explain(false) }

// ExplainBesideAssertion is Explain for a trial in which an assertion failed as well: it never
// suggests leaving a field out, since the assertion may be the evidence that counted the
// executions (a ledger that grew twice).
func (v Violation) ExplainBesideAssertion() []string { return v.explain(true) }

func (v Violation) explain(assertFailed bool) []string {
	labels := make([]string, 0, len(v.Answers))
	for i, c := range v.Answers {
		l := label(c)
		if v.Kind == ReplayDiffers {
			l = [2]string{"first answer: ", "marked replay: "}[min(i, 1)] + l
		}
		labels = append(labels, l)
	}
	width := 0
	for i := range labels[:min(len(labels), maxShown)] {
		width = max(width, len(labels[i]))
	}
	var out []string
	switch v.Kind {
	case ReplayDiffers:
		out = append(out, "an answer marked as a replay must be the stored first answer:")
	default:
		out = append(out, fmt.Sprintf("%d answers to one key that are not replays of each other, each an execution:", v.Executions))
	}
	for i, c := range v.Answers {
		if i == maxShown {
			out = append(out, fmt.Sprintf("  … and %d more", len(v.Answers)-maxShown))
			break
		}
		out = append(out, fmt.Sprintf("  %-*s  %s", width, labels[i], shorten(jsonvalue.Canonical(c.Answer), maxAnswer)))
	}
	if len(v.Differ) > 0 {
		out = append(out, "  they differ at: "+strings.Join(v.Differ, ", "))
	}
	if v.Kind == DoubleExecution && assertFailed {
		out = append(out, "  (an assertion of this trial failed too: if it counts executions, these are executions, not fields to leave out)")
	} else if v.Kind == DoubleExecution {
		out = append(out, "  (if these are not executions: a field that changes on every answer is left out with compare: {ignore: [PATH]}, a tool idempotent by nature is named in natural: [TOOL], both on the endpoint)")
	}
	return out
}

func label(c Call) string {
	l := c.Step
	if c.Copy > 0 {
		l += fmt.Sprintf(" copy %d", c.Copy)
	}
	if c.Attempt > 1 {
		l += fmt.Sprintf(" attempt %d", c.Attempt)
	}
	if c.Instance > 0 {
		l += fmt.Sprintf(" on instance %d", c.Instance)
	}
	if c.Lost {
		l += " (lost)"
	}
	return l
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
