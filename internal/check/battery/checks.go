package battery

import (
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// The checks, by stable id (DESIGN §9).
const (
	Replay            = "replay"
	LostResponse      = "lost-response"
	TimeoutRetry      = "timeout-retry"
	Concurrent        = "concurrent"
	PayloadMismatch   = "payload-mismatch"
	MismatchInFlight  = "mismatch-in-flight"
	DistinctKeys      = "distinct-keys"
	KeyScope          = "key-scope"
	MissingKey        = "missing-key"
	ErrorsNotReplayed = "errors-not-replayed"
	Expiry            = "expiry"
	Annotations       = "annotations"
)

// checks is the battery, in matrix order: a check is a method that builds its scenario, runs it
// and decides the cell, in a file of its own. Adding one is that file and a line here.
var checks = []struct {
	id    string
	check func(b *Battery, t toolset.ToolInfo, args map[string]any) *Cell
}{
	{Replay, (*Battery).replay},
	{LostResponse, (*Battery).lostResponse},
	{TimeoutRetry, (*Battery).timeoutRetry},
	{Concurrent, (*Battery).concurrent},
	{PayloadMismatch, (*Battery).payloadMismatch},
	{MismatchInFlight, (*Battery).mismatchInFlight},
	{DistinctKeys, (*Battery).distinctKeys},
	{KeyScope, (*Battery).keyScope},
	{MissingKey, (*Battery).missingKey},
	{ErrorsNotReplayed, (*Battery).errorsNotReplayed},
	{Expiry, (*Battery).expiry},
	{Annotations, (*Battery).annotations},
}

// IDs lists every check id in matrix order.
var IDs = func() []string {
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = c.id
	}
	return out
}()

// cell decides one cell from the answers and the state.
func (b *Battery) cell(id string, t toolset.ToolInfo, args map[string]any) *Cell {
	for _, c := range checks {
		if c.id == id {
			return c.check(b, t, args)
		}
	}
	return &Cell{Check: id, Status: matrix.Skip, Reason: "not implemented"}
}

// call is a step that calls the tool with args.
func call(t toolset.ToolInfo, id string, args map[string]any) scenariogen.Step {
	return scenariogen.Step{ID: id, CallTool: t.Name, Args: args}
}

// keyless is the cell of a check about keys for a tool idempotent by nature, which it skips.
func (b *Battery) keyless(id string) *Cell {
	return &Cell{Check: id, Status: matrix.Skip, Reason: "idempotent by nature (" + b.naturalWhy() + "): a key is not what makes it safe"}
}

// noEvidence says why a retry check cannot judge a tool idempotent by nature from its answers.
func (b *Battery) noEvidence() string {
	return "idempotent by nature (" + b.naturalWhy() + "): its answers are no evidence of executions"
}

func (b *Battery) naturalWhy() string {
	if b.Def.Natural != nil {
		return "natural: on the endpoint"
	}
	return "idempotentHint"
}

// once is the executions a retry check expects: one, or not counted for a tool idempotent by
// nature, which may execute again harmlessly.
func (b *Battery) once(t toolset.ToolInfo) int {
	if t.Natural {
		return -1
	}
	return 1
}
