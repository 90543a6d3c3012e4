package runtrace

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/trace"
)

func TestTracerWritesCallsInOrder(t *testing.T) {
	sc := &scenario.Scenario{Name: "refunds", Endpoints: map[string]*scenario.Endpoint{
		"mcp":  {Key: scenario.KeySpec{Arg: "idempotencyKey"}},
		"http": {Key: scenario.KeySpec{Header: "Idempotency-Key"}},
	}}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	args := map[string]any{"accountId": "a", "amount": 5}
	var buf bytes.Buffer
	w, err := trace.NewWriter(&buf, trace.Header{Endpoint: "http,mcp", Started: start})
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTracer(w)
	tr.Event(runner.Event{Kind: "scenario-start", Scenario: sc})
	tr.Event(runner.Event{Kind: "call", Scenario: sc, Trial: 2, Call: &result.Call{Step: "first", Tool: "issue_refund", Endpoint: "mcp",
		Key: "s-1", Outcome: outcome.Info, Status: 200, Lost: true, Start: start.Add(time.Millisecond), Duration: 2 * time.Millisecond,
		Args: args, Mutating: true, Result: map[string]any{"refundId": "re_1"}}})
	tr.Event(runner.Event{Kind: "call", Scenario: sc, Trial: 2, Call: &result.Call{Step: "list", Tool: "list_refunds", Endpoint: "http",
		Outcome: outcome.OK, Start: start.Add(3 * time.Millisecond), Args: args}})
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	_, calls, err := trace.Read(context.Background(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2", len(calls))
	}
	first, list := calls[0], calls[1]
	if first.Seq != 1 || first.AtUS != 1000 || first.DurationUS != 2000 || first.Scenario != "refunds" || first.Trial != 2 || first.Step != "first" ||
		first.Endpoint != "mcp" || first.KeyCarrier != "arg idempotencyKey" || first.Fault != "lose-response" || first.Outcome != "info" || !first.Mutating ||
		string(first.Args) != `{"accountId":"a","amount":5,"idempotencyKey":"s-1"}` || string(first.Result) != `{"refundId":"re_1"}` {
		t.Errorf("lost call traced as %+v (args %s, result %s)", first, first.Args, first.Result)
	}
	if _, ok := args["idempotencyKey"]; ok {
		t.Error("the key was added to the run's own arguments")
	}
	if list.Seq != 2 || list.Key != "" || list.KeyCarrier != "header Idempotency-Key" || list.Fault != "" || list.Mutating ||
		string(list.Args) != `{"accountId":"a","amount":5}` {
		t.Errorf("read-only call traced as %+v (args %s)", list, list.Args)
	}
}
