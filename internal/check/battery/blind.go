package battery

import (
	"strings"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// blindness says why a retry that got an unmarked answer equal to the first and left the state
// as the first call left it proves no replay: a call with a fresh key and the same arguments,
// which must execute, does the same (the tool is idempotent by nature, an UPDATE of one row:
// a second execution answers and leaves the state as the first did). "" when that call showed
// what a second execution looks like: another answer, or another state. Such a ✓ could not go
// red on a server that ignores keys. It runs that call once per tool.
func (b *Battery) blindness(t toolset.ToolInfo, args map[string]any, noID bool) string {
	if b.blind != nil {
		return *b.blind
	}
	why := ""
	defer func() { b.blind = &why }()
	s := b.NewPlan(t, "control", "a call with a fresh key and the same arguments executes again",
		b.Snap.Steps(call(t, "first", args), scenariogen.Step{ID: "second", CallTool: t.Name, Args: args, Expect: "any"})...)
	res, err := b.Exec(s)
	if err != nil || res.Status == "" {
		return why
	}
	tr := explain.Trial(res)
	first, second := explain.Calls(tr, "first"), explain.Calls(tr, "second")
	if len(first) == 0 || len(second) == 0 || first[0].Outcome != outcome.OK || second[0].Outcome != outcome.OK {
		return why
	}
	moved, same := b.Snap.Same(tr)
	equal := noID || jsonvalue.Equal(first[0].Result, second[0].Result)
	if !equal || (len(b.Snap.Tools) > 0 && !same) {
		return why
	}
	what := "gets an answer equal to the first"
	if noID {
		what = "gets an answer without an id too"
	}
	if same {
		what += " and leaves " + strings.Join(moved, ", ") + " as one call does"
	}
	why = "a call with a fresh key and the same arguments " + what + ", so an execution and a replay look the same here (idempotent by nature?): declare check.tools." + t.Name + ".effects, or a sink, to count executions"
	return why
}

// unmarked reports that no call of step was marked as a replay by the server.
func unmarked(tr *result.Trial, step string) bool {
	for _, c := range explain.Calls(tr, step) {
		if c.Replayed {
			return false
		}
	}
	return true
}

// earned is why a retry check's ✓ from an unmarked answer and the state is not earned (blindness),
// or "": only for the checks of a retry after completion, and only where neither the declared
// effects nor the sinks count the executions (they judge the cell after it).
func (b *Battery) earned(id string, t toolset.ToolInfo, s *rig.Plan, first string, noID bool) string {
	if (id != Replay && id != LostResponse && id != Expiry) || s.Effects != "" || s.SinksAsserted || t.Natural {
		return ""
	}
	for _, st := range s.Steps {
		if st.ID == first && st.CallTool == t.Name {
			return b.blindness(t, st.Args, noID)
		}
	}
	return ""
}
