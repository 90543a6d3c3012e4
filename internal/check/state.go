package check

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/idemtest/idemtest/internal/check/spec"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/verdict"
)

// State evidence (DESIGN §9) outranks the answers: a server that deduplicates by content answers
// a retry differently ("nothing created") yet leaves the state as one call left it, and a server
// whose racing copies all answer alike may still have changed the state once per copy.

// stateSteps surrounds a call and a second call with reads of the snapshot tools, asserting
// nothing about them.
func (b *battery) stateSteps(first, second spec.Step) []spec.Step {
	var before, mid, after []spec.Step
	for i, tool := range b.snapshots {
		b0, b1, b2 := stateIDs(i)
		read := func(id string) spec.Step {
			return spec.Step{ID: id, CallTool: tool, Args: b.x.snapArgs[tool], Expect: "any"}
		}
		before, mid, after = append(before, read(b0)), append(mid, read(b1)), append(after, read(b2))
	}
	out := append(before, first)
	out = append(out, mid...)
	out = append(out, second)
	return append(out, after...)
}

// aroundOne surrounds one step with reads of the snapshot tools, before and after.
func (b *battery) aroundOne(step spec.Step) []spec.Step {
	var before, after []spec.Step
	for i, tool := range b.snapshots {
		b0, b1, _ := stateIDs(i)
		before = append(before, spec.Step{ID: b0, CallTool: tool, Args: b.x.snapArgs[tool], Expect: "any"})
		after = append(after, spec.Step{ID: b1, CallTool: tool, Args: b.x.snapArgs[tool], Expect: "any"})
	}
	return append(append(before, step), after...)
}

// snapshot is one read of a snapshot tool that answered.
func snapshot(t *runner.Trial, id string) (any, bool) {
	rs := calls(t, id)
	if len(rs) == 0 || rs[0].Outcome != scenario.OK {
		return nil, false
	}
	return rs[0].Result, true
}

// delta is how a call changed the state, by path: the change in length of each list and in
// value of each integer. Strings, booleans and the items themselves are left out: a value unique
// per trial or a timestamp would make two calls' changes differ when their effects do not.
type delta map[string]float64

// change is what changed from before to after in the snapshot tools' answers of trial t, read
// at ids before and after (the first and second of stateIDs); ok is false when a read is missing.
func (b *battery) change(t *runner.Trial, second bool) (d delta, ok bool) {
	d = delta{}
	for i, tool := range b.snapshots {
		b0, b1, b2 := stateIDs(i)
		if second {
			b0 = b1
			b1 = b2
		}
		x, ok0 := snapshot(t, b0)
		y, ok1 := snapshot(t, b1)
		if !ok0 || !ok1 {
			return nil, false
		}
		diffDelta(x, y, tool, b.def.Ignore, d)
	}
	return d, true
}

func diffDelta(x, y any, path string, ignore []string, out delta) {
	for _, ig := range ignore {
		if strings.HasSuffix(path, "."+ig) {
			return
		}
	}
	switch a := x.(type) {
	case map[string]any:
		z, _ := y.(map[string]any)
		keys := map[string]bool{}
		for k := range a {
			keys[k] = true
		}
		for k := range z {
			keys[k] = true
		}
		for k := range keys {
			diffDelta(a[k], z[k], path+"."+k, ignore, out)
		}
	case []any:
		z, ok := y.([]any)
		switch {
		case !ok:
		case len(z) != len(a):
			out["len("+path+")"] = float64(len(z) - len(a))
		default:
			// The same items in place (a graph's entities): what changed is inside them.
			for i := range a {
				diffDelta(a[i], z[i], fmt.Sprintf("%s.%d", path, i), ignore, out)
			}
		}
	case float64:
		if z, ok := y.(float64); ok && z != a && a == math.Trunc(a) && z == math.Trunc(z) {
			out[path] = z - a
		}
	case nil:
		if z, ok := y.([]any); ok && len(z) > 0 {
			out["len("+path+")"] = float64(len(z))
		}
	}
}

// String shows a delta in a stable order: "len(read_graph.entities) +1".
func (d delta) String() string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %+g", k, d[k]))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// times compares a burst's change with one call's: the most calls' worth of change the burst
// made on a path one call changes (1 when it changed as one call does, 0 when nothing shows).
func times(burst, one delta) (n float64, at string) {
	for _, k := range sortedPaths(one) {
		if one[k] == 0 {
			continue
		}
		if r := burst[k] / one[k]; r > n {
			n, at = r, k
		}
	}
	return n, at
}

func sortedPaths(d delta) []string {
	out := make([]string, 0, len(d))
	for k := range d {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// stateSame reports the snapshot tools that the first call changed, and whether the second call
// left every one of them as the first left it (false when the first changed nothing visible).
func (b *battery) stateSame(t *runner.Trial) (moved []string, same bool) {
	moved, changed := b.state(t)
	return moved, len(moved) > 0 && len(changed) == 0
}

// overruled turns a retry check's ✗ from the answers alone into what the state shows: the retry
// answered as a second execution would, yet left the state as the first call left it (a server
// that deduplicates by content). It is safe, but the agent never gets the first answer.
func (b *battery) overruled(c *Cell, res *runner.ScenarioResult, what string) bool {
	if c.Status != Fail || c.Evidence != byAnswers || res == nil || res.Metrics.DuplicateExecutions == 0 {
		return false
	}
	moved, same := b.stateSame(trialOf(res))
	if !same {
		return false
	}
	if f, ok := b.mintedKey(trialOf(res), "retry"); ok {
		c.Evidence += ", state (" + strings.Join(moved, ", ") + ")"
		c.Reason += "; " + what + " answered with a new " + f.String() + " that no earlier answer carried: " + mintedWhy(moved)
		return true
	}
	c.Status, c.Evidence = Warn, "state ("+strings.Join(moved, ", ")+"), answers"
	b.contentDedup = true
	stateDecides(c.Scenario, "retry", "again")
	c.Reason = what + " answered differently from the first call but left " + strings.Join(moved, ", ") +
		" as the first call left it: the server deduplicates by content (safe), but the agent never gets the first answer"
	return true
}

// mintedWhy explains a ✗ that an unchanged state view did not overrule.
func mintedWhy(moved []string) string {
	return "a second execution, though " + strings.Join(moved, ", ") + " did not change (a view that does not count executions cannot rule one out)"
}

// control calls the tool once with a fresh key: a refusal says something about keys only when
// such a call works.
func (b *battery) control(t runner.ToolInfo, args map[string]any) (ok bool, why string) {
	s := b.spec(t, "control", "a call with a fresh key", spec.Step{ID: "control", CallTool: t.Name, Args: args, Expect: "any"})
	res, err := b.exec(s)
	if err != nil {
		return false, err.Error()
	}
	rs := calls(trialOf(res), "control")
	if len(rs) == 0 {
		return false, "not sent"
	}
	return rs[0].Outcome == scenario.OK, statusNote(rs[0])
}

// inconclusiveControl turns a ✓ for a refused call into ? when a call with a fresh key and the
// same arguments is refused too: the refusal was not about the key.
func (b *battery) inconclusiveControl(c *Cell, t runner.ToolInfo, args map[string]any, what string) {
	if c.Status != Pass && c.Status != Warn {
		return
	}
	ok, why := b.control(t, args)
	if ok {
		return
	}
	c.Status, c.Evidence = Inconclusive, byStatus
	c.Reason = what + " was refused, but so is a call with a fresh key" + why + ": the refusal is not about the key"
}

// distinctEvidence revises a distinct-keys cell with what else is known: a second call that
// changed nothing though the first did (the server deduplicates by content), or a refusal that a
// call with other arguments gets too (it is not about the payload).
func (b *battery) distinctEvidence(c *Cell, tr *runner.Trial, t runner.ToolInfo, args map[string]any) {
	switch c.Status {
	case Pass:
		moved, same := b.stateSame(tr)
		if _, ok := b.minted(tr, "first", "second"); same && !ok {
			c.Status, c.Evidence = Warn, "state ("+strings.Join(moved, ", ")+")"
			c.Reason = "the second key's call left " + strings.Join(moved, ", ") + " as the first call left it: the server deduplicates by content, so one payload is one operation whatever the keys"
		}
	case Fail:
		other, _, ok := vary(args)
		if !ok {
			return
		}
		if works, why := b.control(t, other); !works {
			c.Status = Inconclusive
			c.Reason = "a new key with the same arguments was refused, but so is a call with other arguments" + why + ": the refusal is not a dedupe on the payload"
		}
	}
}

// twice explains a first call that failed after the plain call before the battery worked: with
// the same arguments (no {{ }} to make them unique per trial), the tool does not run twice.
func (b *battery) twice(s *plan, first string) string {
	for _, st := range s.Steps {
		if st.ID != first {
			continue
		}
		raw, _ := json.Marshal(st.Args)
		if !strings.Contains(string(raw), "{{") {
			return "; the same arguments worked in the plain call before the battery, so the tool does not run twice with them"
		}
	}
	return "; give working arguments under check: {tools: {" + s.Tool + ": {args: …}}}"
}

// readOnly judges a tool annotated readOnlyHint that is checked as mutating: one call must leave
// every snapshot tool's answer as it was.
func (b *battery) readOnly(t runner.ToolInfo, call spec.Step) *Cell {
	s := b.spec(t, Annotations, "readOnlyHint: a call changes nothing", b.aroundOne(call)...)
	s.Comment = "The tool is annotated readOnlyHint: a call must leave the state as it was."
	j, done := b.judge(s, call.ID, call.ID)
	c, res, tr := j.cell, j.res, j.tr
	if done {
		return c
	}
	if len(b.snapshots) == 0 {
		c.Status, c.Reason = Inconclusive, "annotated readOnlyHint, and no read-only tool without required arguments can show the state"
		return c
	}
	var changed []string
	for i, tool := range b.snapshots {
		b0, b1, _ := stateIDs(i)
		x, ok0 := snapshot(tr, b0)
		y, ok1 := snapshot(tr, b1)
		if !ok0 || !ok1 {
			c.Status, c.Reason = Inconclusive, "could not read "+tool+" before and after the call"
			return c
		}
		if !jsonEqual(b.view(x), b.view(y)) {
			changed = append(changed, tool)
		}
	}
	c.Evidence = "state (" + strings.Join(b.snapshots, ", ") + ")"
	if len(changed) > 0 {
		c.Status = Fail
		c.Reason = "annotated readOnlyHint, yet one call changed " + strings.Join(changed, ", ")
		c.Details = details(res, tr)
		return c
	}
	c.Status, c.Reason = Pass, "annotated readOnlyHint, and a call left "+strings.Join(b.snapshots, ", ")+" as it was"
	return c
}

// burstState compares a concurrent round's change of the state with one call's: n is 1 when the
// burst changed it as one call does, above 1 when as several calls do (why says where), 0 when
// the state says nothing.
func (b *battery) burstState(res *runner.ScenarioResult) (n float64, why string) {
	if len(b.oneCall) == 0 || res == nil {
		return 0, ""
	}
	d, ok := b.change(trialOf(res), false)
	if !ok {
		return 0, ""
	}
	n, at := times(d, b.oneCall)
	switch {
	case n >= 1.5:
		return n, fmt.Sprintf("one burst changed %s by %+g, as %g calls do (one call: %+g): the copies executed %g times", at, d[at], n, b.oneCall[at], n)
	case n > 0:
		return 1, ""
	}
	return 0, ""
}

// burstAsserts are the state checks of a saved concurrent scenario: each list or counter one
// call changes changes no more in a burst (paths with names expr cannot spell are left out).
func (b *battery) burstAsserts() []spec.Step {
	var out []spec.Step
	for _, p := range sortedPaths(b.oneCall) {
		inner, list := strings.CutPrefix(p, "len(")
		inner = strings.TrimSuffix(inner, ")")
		tool, rest, _ := strings.Cut(inner, ".")
		i := slices.Index(b.snapshots, tool)
		if i < 0 || !identPath.MatchString(rest) {
			continue
		}
		b0, b1, _ := stateIDs(i)
		d := b.oneCall[p]
		expr := fmt.Sprintf("%s.result.%s - %s.result.%s", b1, rest, b0, rest)
		if list {
			expr = fmt.Sprintf("len(%s.result.%s ?? []) - len(%s.result.%s ?? [])", b1, rest, b0, rest)
		}
		op := "<="
		if d < 0 {
			op = ">="
		}
		out = append(out, spec.Step{Assert: fmt.Sprintf("%s %s %g", expr, op, d)})
	}
	return out
}

// identPath matches a dotted path expr can spell after "result.".
var identPath = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// firstFailed reports whether the step's call failed, its discarded answer included.
func firstFailed(t *runner.Trial, step string) bool {
	rs := calls(t, step)
	return len(rs) > 0 && (rs[0].Outcome == scenario.Fail || rs[0].Discarded == scenario.Fail)
}

// oneLine keeps a cell's reason and each detail on one line: servers' error messages (an edit
// that did not match, a stack) carry newlines that would break the matrix's layout.
func oneLine(c *Cell) {
	c.Reason = strings.ReplaceAll(c.Reason, "\n", " ")
	for i, l := range c.Details {
		c.Details[i] = strings.ReplaceAll(l, "\n", " ")
	}
}

// stateDecides leaves steps out of the exactly-once verdict in the saved scenario, once the
// state overruled the answers: run then judges them as check did, by the state assertions.
func stateDecides(s *spec.Spec, steps ...string) {
	for _, step := range steps {
		stateDecidesBecause(s, step, " The server deduplicates by content: its answers differ though the state shows one execution, so the state decides (verdict: off).")
	}
}

// stateDecidesBecause turns the verdict off on a saved spec's step, saying why in its comment
// (once).
func stateDecidesBecause(s *spec.Spec, step, why string) {
	if s == nil {
		return
	}
	for i := range s.Steps {
		if s.Steps[i].ID == step {
			s.Steps[i].Verdict = "off"
			if !strings.Contains(s.Comment, why) {
				s.Comment += why
			}
		}
	}
}

// view is a snapshot as the state comparisons see it: without the fields the endpoint's
// compare.ignore names (a timestamp in a list's answer), as the verdict leaves them out.
func (b *battery) view(v any) any {
	return verdict.Without(v, b.def.Ignore)
}

// stateJSON is the expression of a saved scenario's assertion that reads snapshot step id as
// view does: toJSON(id.result), without the ignored fields.
func (b *battery) stateJSON(id string) string {
	if len(b.def.Ignore) == 0 {
		return "toJSON(" + id + ".result)"
	}
	paths := make([]string, len(b.def.Ignore))
	for i, p := range b.def.Ignore {
		paths[i] = strconv.Quote(p)
	}
	return "toJSON(without(" + id + ".result, " + strings.Join(paths, ", ") + "))"
}

// unchanged asserts, in a saved scenario, that the call between the snapshot reads at
// stateIDs position from and from+1 left every snapshot tool's answer as it was (a refused call
// executes nothing).
func (b *battery) unchanged(from int) []spec.Step {
	var out []spec.Step
	for i := range b.snapshots {
		ids := stateIDsOf(i)
		out = append(out, spec.Step{Assert: b.stateJSON(ids[from]) + " == " + b.stateJSON(ids[from+1])})
	}
	return out
}

func stateIDsOf(i int) [3]string {
	b0, b1, b2 := stateIDs(i)
	return [3]string{b0, b1, b2}
}

// executedAnyway turns a refused call's cell into ✗ when the snapshot tools show that it
// executed all the same (a server that commits, then answers 422): from is the stateIDs
// position read just before the call. It reports whether it did.
func (b *battery) executedAnyway(c *Cell, r runner.Call, tr *runner.Trial, from int, what string) bool {
	if r.Outcome != scenario.Fail {
		return false
	}
	var changed []string
	for i, tool := range b.snapshots {
		ids := stateIDsOf(i)
		x, ok0 := snapshot(tr, ids[from])
		y, ok1 := snapshot(tr, ids[from+1])
		if ok0 && ok1 && !jsonEqual(b.view(x), b.view(y)) {
			changed = append(changed, tool)
		}
	}
	if len(changed) == 0 {
		return false
	}
	c.Status, c.Evidence = Fail, byStatus+", state ("+strings.Join(changed, ", ")+")"
	c.Reason = what + " was refused" + statusNote(r) + " but executed: it changed " + strings.Join(changed, ", ")
	return true
}

// changedAround lists the snapshot tools whose answer differs after the one call aroundOne
// surrounds from before it.
func (b *battery) changedAround(tr *runner.Trial) []string {
	var changed []string
	for i, tool := range b.snapshots {
		b0, b1, _ := stateIDs(i)
		x, ok0 := snapshot(tr, b0)
		y, ok1 := snapshot(tr, b1)
		if ok0 && ok1 && !jsonEqual(b.view(x), b.view(y)) {
			changed = append(changed, tool)
		}
	}
	return changed
}
