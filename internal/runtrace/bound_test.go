package runtrace

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/trace"
)

// A server that answered 70 MiB leaves a trace that trace.Read (and so sweep) reads back: the
// result left out and marked, the rest of the call kept.
func TestTracerBoundsAHugeResult(t *testing.T) {
	if testing.Short() {
		t.Skip("traces a 70 MiB result")
	}
	sc := &scenario.Scenario{Name: "giant", Endpoints: map[string]*scenario.Endpoint{"refunds": {Key: scenario.KeySpec{Header: "Idempotency-Key"}}}}
	var buf bytes.Buffer
	w, err := trace.NewWriter(&buf, trace.Header{Endpoint: "refunds"})
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTracer(w)
	tr.Event(runner.Event{Kind: runner.EventCall, Scenario: sc, Trial: 1, Call: &result.Call{Step: "first", Tool: "issue_refund", Endpoint: "refunds",
		Key: "s-1", Outcome: outcome.OK, Status: 200, Mutating: true, Args: map[string]any{"accountId": "a"},
		Result: map[string]any{"refundId": strings.Repeat("x", 70<<20)}}})
	tr.Event(runner.Event{Kind: runner.EventCall, Scenario: sc, Trial: 1, Call: &result.Call{Step: "second", Tool: "issue_refund", Endpoint: "refunds",
		Key: "s-2", Outcome: outcome.OK, Status: 200, Mutating: true, Result: map[string]any{"refundId": "re_2"}}})
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	_, calls, err := trace.Read(context.Background(), &buf)
	if err != nil {
		t.Fatalf("read the trace back: %v", err)
	}
	if len(calls) != 2 || !calls[0].ResultTruncated || len(calls[0].Result) != 0 || calls[0].Key != "s-1" || string(calls[0].Args) != `{"accountId":"a"}` ||
		calls[1].ResultTruncated || string(calls[1].Result) != `{"refundId":"re_2"}` {
		t.Errorf("traced %+v", calls)
	}
}
