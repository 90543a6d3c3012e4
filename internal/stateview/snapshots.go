package stateview

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// Snapshots are the read-only calls whose answers are the server's state, read around a check's
// calls, and how their answers are compared.
type Snapshots struct {
	// Tools are the snapshot tools, in the order they are read.
	Tools []string
	// Args are the arguments of configured snapshot calls, by tool (none for a listed tool).
	Args map[string]map[string]any
	// Ignore are the fields left out of every comparison (the endpoint's compare.ignore), as the
	// verdict leaves them out.
	Ignore []string
}

// maxSnapshots bounds the read-only tools read before and after each retry.
const maxSnapshots = 3

// SnapshotTools are the state idemtest can read without help: read-only tools (as the mutating
// decision has it) that the server describes and that need no argument.
func SnapshotTools(tools []toolset.ToolInfo) []string {
	var out []string
	for _, t := range tools {
		if t.Mutating || t.InputSchema == nil {
			continue
		}
		if req, ok := t.InputSchema["required"].([]any); ok && len(req) > 0 {
			continue
		}
		out = append(out, t.Name)
	}
	sort.Strings(out)
	if len(out) > maxSnapshots {
		out = out[:maxSnapshots]
	}
	return out
}

// ids are the ids of the snapshot steps of read-only tool i: before the first call, after it,
// after the retry (or second call).
func ids(i int) [3]string {
	sfx := ""
	if i > 0 {
		sfx = fmt.Sprint(i + 1)
	}
	return [3]string{"state" + sfx + "_before", "state" + sfx + "_after_first", "state" + sfx + "_after_retry"}
}

// read is the step that reads snapshot tool at id.
func (s Snapshots) read(tool, id string) scenariogen.Step {
	return scenariogen.Step{ID: id, CallTool: tool, Args: s.Args[tool], Expect: "any"}
}

// Steps surrounds a call and a second call with reads of the snapshot tools, asserting nothing
// about them.
func (s Snapshots) Steps(first, second scenariogen.Step) []scenariogen.Step {
	var before, mid, after []scenariogen.Step
	for i, tool := range s.Tools {
		id := ids(i)
		before, mid, after = append(before, s.read(tool, id[0])), append(mid, s.read(tool, id[1])), append(after, s.read(tool, id[2]))
	}
	out := append(before, first)
	out = append(out, mid...)
	out = append(out, second)
	return append(out, after...)
}

// AroundOne surrounds one step with reads of the snapshot tools, before and after.
func (s Snapshots) AroundOne(step scenariogen.Step) []scenariogen.Step {
	var before, after []scenariogen.Step
	for i, tool := range s.Tools {
		id := ids(i)
		before = append(before, s.read(tool, id[0]))
		after = append(after, s.read(tool, id[1]))
	}
	return append(append(before, step), after...)
}

// WithState surrounds a call and its retry with reads of the snapshot tools, and asserts that a
// retry leaves the state as the first call left it (when the first call visibly changed it).
func (s Snapshots) WithState(first, retry scenariogen.Step) []scenariogen.Step {
	var asserts []scenariogen.Step
	for i := range s.Tools {
		id := ids(i)
		x0, x1, x2 := s.json(id[0]), s.json(id[1]), s.json(id[2])
		asserts = append(asserts, scenariogen.Step{Assert: x0 + " == " + x1 + " || " + x1 + " == " + x2})
	}
	return append(s.Steps(first, retry), asserts...)
}

// Unchanged asserts, in a saved scenario, that the call between the snapshot reads at position
// from and from+1 (0: before the first call, 1: after it, 2: after the second) left every
// snapshot tool's answer as it was (a refused call executes nothing).
func (s Snapshots) Unchanged(from int) []scenariogen.Step {
	var out []scenariogen.Step
	for i := range s.Tools {
		id := ids(i)
		out = append(out, scenariogen.Step{Assert: s.json(id[from]) + " == " + s.json(id[from+1])})
	}
	return out
}

// json is the expression of a saved scenario's assertion that reads snapshot step id as view
// does: toJSON(id.result), without the ignored fields.
func (s Snapshots) json(id string) string {
	if len(s.Ignore) == 0 {
		return "toJSON(" + id + ".result)"
	}
	paths := make([]string, len(s.Ignore))
	for i, p := range s.Ignore {
		paths[i] = strconv.Quote(p)
	}
	return "toJSON(without(" + id + ".result, " + strings.Join(paths, ", ") + "))"
}

// view is a snapshot as the state comparisons see it: without the fields the endpoint's
// compare.ignore names (a timestamp in a list's answer), as the verdict leaves them out.
func (s Snapshots) view(v any) any {
	return jsonvalue.Without(v, s.Ignore)
}

// first is the first call of step id in the trial.
func first(t *result.Trial, id string) (result.Call, bool) {
	if cs := explain.Calls(t, id); len(cs) > 0 {
		return cs[0], true
	}
	return result.Call{}, false
}

// snapshot is one read of a snapshot tool that answered.
func snapshot(t *result.Trial, id string) (any, bool) {
	c, ok := first(t, id)
	if !ok || c.Outcome != outcome.OK {
		return nil, false
	}
	return c.Result, true
}
