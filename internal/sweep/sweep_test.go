package sweep

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/endpoint/endpointtest"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	runresult "github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/trace"
)

// ordersWork is how long each mutating call of ordersServer works.
const ordersWork = 200 * time.Millisecond

// ordersServer is a real MCP server with a chain of calls: create_order mints an order id that
// pay_order must be given. With keys honoured, a key seen before gets the stored answer, and one
// whose call still works is told it is in progress; without, every call executes; quiet,
// pay_order ignores keys and answers the same constant every time, so only the state shows a
// second payment.
func ordersServer(t *testing.T, honour, quiet bool) string {
	var mu sync.Mutex
	type order struct {
		ID       string `json:"id"`
		Item     string `json:"item"`
		Payments int    `json:"payments"`
	}
	orders := map[string]*order{}
	stored := map[string]map[string]any{}
	working := map[string]bool{}
	arrived := map[string]int{}
	met := map[string]chan struct{}{}
	keyed := func(name string, do func(args map[string]any) (map[string]any, bool)) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			key, _ := args["idempotencyKey"].(string)
			mu.Lock()
			if met[name+key] == nil {
				met[name+key] = make(chan struct{})
			}
			if arrived[name+key]++; arrived[name+key] == 2 {
				close(met[name+key])
			}
			ch := met[name+key]
			if prev, ok := stored[name+key]; ok && honour {
				mu.Unlock()
				return &mcp.CallToolResult{StructuredContent: prev, Content: []mcp.Content{&mcp.TextContent{Text: "replayed"}}, Meta: mcp.Meta{"idempotentReplayed": true}}, nil
			}
			if working[name+key] && honour {
				mu.Unlock()
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "a request with this key is in progress"}}}, nil
			}
			working[name+key] = true
			mu.Unlock()
			// The work takes a while, and a call its client gave up on works until its retry
			// comes: the retry meets it in flight whatever the machine's pace.
			hold(ctx, ch, ordersWork)
			mu.Lock()
			defer mu.Unlock()
			delete(working, name+key)
			out, ok := do(args)
			if !ok {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such order"}}}, nil
			}
			stored[name+key] = out
			return &mcp.CallToolResult{StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		}
	}
	schema := json.RawMessage(`{"type":"object","properties":{"item":{"type":"string"},"orderId":{"type":"string"},"idempotencyKey":{"type":"string"}}}`)
	srv := mcp.NewServer(&mcp.Implementation{Name: "orders", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "create_order", InputSchema: schema}, keyed("create", func(args map[string]any) (map[string]any, bool) {
		o := &order{ID: "o_" + randomHex(), Item: args["item"].(string)}
		orders[o.ID] = o
		return map[string]any{"orderId": o.ID, "item": o.Item}, true
	}))
	srv.AddTool(&mcp.Tool{Name: "pay_order", InputSchema: schema}, keyed("pay", func(args map[string]any) (map[string]any, bool) {
		id, _ := args["orderId"].(string)
		o := orders[id]
		if o == nil {
			return nil, false
		}
		o.Payments++
		if quiet {
			return map[string]any{"paid": true}, true
		}
		return map[string]any{"paymentId": "p_" + randomHex(), "orderId": id}, true
	}))
	srv.AddTool(&mcp.Tool{Name: "list_orders", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			list := []any{}
			for _, o := range orders {
				list = append(list, map[string]any{"id": o.ID, "item": o.Item, "payments": o.Payments})
			}
			return &mcp.CallToolResult{StructuredContent: map[string]any{"orders": list}, Content: []mcp.Content{&mcp.TextContent{Text: "listed"}}}, nil
		})
	return endpointtest.ServeMCP(t, srv)
}

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ordersTrace is a recorded session: create an order, pay it by the id that came back, list.
func ordersTrace() []trace.Call {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	return []trace.Call{
		{Seq: 1, Tool: "create_order", Args: raw(`{"item":"book","idempotencyKey":"s-1"}`), Key: "s-1", KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: "ok", Result: raw(`{"orderId":"o_rec1","item":"book"}`)},
		{Seq: 2, Tool: "pay_order", Args: raw(`{"orderId":"o_rec1","idempotencyKey":"s-2"}`), Key: "s-2", KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: "ok", Result: raw(`{"paymentId":"p_rec","orderId":"o_rec1"}`)},
		{Seq: 3, Tool: "list_orders", Args: raw(`{}`), Outcome: "ok", Result: raw(`{"orders":[{"id":"o_rec1","item":"book","payments":1}]}`)},
	}
}

func TestPlanCarriesReturnedValues(t *testing.T) {
	p, err := newPlan(context.Background(), ordersTrace(), "idempotencyKey")
	if err != nil {
		t.Fatal(err)
	}
	want := []Carry{{From: 1, Path: "orderId", To: 2, Arg: "orderId", Value: "o_rec1"}}
	if jsonvalue.Canonical(p.carries) != jsonvalue.Canonical(want) {
		t.Fatalf("carries = %s, want %s", jsonvalue.Canonical(p.carries), jsonvalue.Canonical(want))
	}
	for _, tc := range []struct {
		name string
		r    run
		want string
	}{
		{"clean", run{fault: Clean}, "{{ c1.result.orderId }}"},
		{"lost", run{fault: LostResponse, call: p.calls[0]}, "{{ c1_retry.result.orderId }}"},
		{"duplicate", run{fault: Duplicate, call: p.calls[0]}, "{{ (first(filter(c1.calls, .ok)) ?? c1.calls[0]).result.orderId }}"},
		{"another call lost", run{fault: LostResponse, call: p.calls[1]}, "{{ c1.result.orderId }}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := tc.r.steps(p)
			var got any
			for _, st := range steps {
				if st.ID == "c2" {
					got = st.Args["orderId"]
				}
				if _, ok := st.Args["idempotencyKey"]; ok {
					t.Errorf("step %s sends the recorded key", st.ID)
				}
			}
			if got != tc.want {
				t.Errorf("c2 orderId = %v, want %s", got, tc.want)
			}
			// The templates compile as the loader compiles them.
			sp := &scenariogen.Spec{Endpoint: "e", Steps: steps, Tool: "t", Check: tc.r.fault}
			if _, err := sp.Scenario(&scenario.Scenario{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSweepOrders(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: race window: every call works 200ms so that the timeout fault lands in it")
	}
	for _, tc := range []struct {
		name          string
		honour, quiet bool
		reason        string
		want          map[string]matrix.Status
	}{
		{"keys honoured", true, false, "", map[string]matrix.Status{
			"1 lost-response": matrix.Pass, "1 duplicate": matrix.Pass, "1 timeout": matrix.Pass,
			"2 lost-response": matrix.Pass, "2 duplicate": matrix.Pass, "2 timeout": matrix.Pass}},
		{"keys ignored", false, false, "", map[string]matrix.Status{
			"1 lost-response": matrix.Fail, "1 duplicate": matrix.Fail, "1 timeout": matrix.Fail,
			"2 lost-response": matrix.Fail, "2 duplicate": matrix.Fail, "2 timeout": matrix.Fail}},
		// The answers of pay_order look like replays: the state alone goes red.
		{"keys ignored, answers constant", false, true, "diverged: list_orders (state after the run): the change differs from run 0's at orders.+.0.payments", map[string]matrix.Status{
			"1 lost-response": matrix.Fail, "1 duplicate": matrix.Fail, "1 timeout": matrix.Fail,
			"2 lost-response": matrix.Fail, "2 duplicate": matrix.Fail, "2 timeout": matrix.Fail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := scenario.AdHocScenario(context.Background(), scenario.AdHoc{MCPURL: ordersServer(t, tc.honour, tc.quiet)})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(context.Background(), base, "orders.jsonl", ordersTrace(), Options{Endpoint: scenario.AdHocName})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Baseline.Status != matrix.Pass {
				t.Fatalf("run 0: %s %s\n%s", rep.Baseline.Status, rep.Baseline.Reason, strings.Join(rep.Baseline.Details, "\n"))
			}
			got := map[string]matrix.Status{}
			var lines []string
			for _, c := range rep.Cells {
				k := strings.TrimSpace(strings.Join([]string{itoa(c.Seq), c.Fault}, " "))
				got[k] = c.Status
				if c.Seq == 2 && tc.reason != "" && c.Reason != tc.reason {
					t.Errorf("call 2 %s: %s, want %s", c.Fault, c.Reason, tc.reason)
				}
				lines = append(lines, k+": "+string(c.Status)+" "+c.Reason+"\n  "+strings.Join(c.Details, "\n  "))
			}
			sort.Strings(lines)
			t.Log(strings.Join(lines, "\n"))
			if jsonvalue.Canonical(got) != jsonvalue.Canonical(tc.want) {
				t.Errorf("cells = %s, want %s\n%s", jsonvalue.Canonical(got), jsonvalue.Canonical(tc.want), strings.Join(lines, "\n"))
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestAnsweredFirst: a timeout run whose call was answered judged nothing unless the call is as
// fast as the shortest give-up; another run waits as long when the client was late to give up,
// half as long when the server was faster than in run 0.

// TestAnsweredFirst: a timeout run whose call was answered judged nothing unless the call is as
// fast as the shortest give-up; another run waits as long when the client was late to give up,
// half as long when the server was faster than in run 0.
func TestAnsweredFirst(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		giveUp time.Duration
		first  runresult.Call
		missed string
		again  time.Duration
	}{
		{name: "given up", giveUp: 50 * ms, first: runresult.Call{Outcome: outcome.Info, Duration: 50 * ms}},
		{name: "as fast as the shortest give-up", giveUp: minGiveUp, first: runresult.Call{Outcome: outcome.OK, Duration: 21 * ms}},
		{name: "faster than in run 0", giveUp: 50 * ms, first: runresult.Call{Outcome: outcome.OK, Duration: 30 * ms}, missed: "answered within about 50ms, faster than in run 0", again: 25 * ms},
		{name: "the client too busy to give up", giveUp: 50 * ms, first: runresult.Call{Outcome: outcome.OK, Duration: 210 * ms}, missed: "answered after 210ms, though the client was to give up on it after 50ms", again: 50 * ms},
		{name: "too busy at the shortest give-up", giveUp: minGiveUp, first: runresult.Call{Outcome: outcome.OK, Duration: 60 * ms}, missed: "the machine was too busy to give up in time", again: minGiveUp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			missed, again := answeredFirst(run{fault: Timeout, giveUp: tc.giveUp}, []runresult.Call{tc.first})
			if !strings.Contains(missed, tc.missed) || (missed == "") != (tc.missed == "") || again != tc.again {
				t.Errorf("answeredFirst = %q, %s; want %q, %s", missed, again, tc.missed, tc.again)
			}
		})
	}
}

// payServer is a real MCP server whose pay tool is naive (check the key, work, execute, store)
// but drops a call whose client gave up before the work was done: a retry after a client
// timeout never meets a call in flight.
func payServer(t *testing.T) string {
	var mu sync.Mutex
	stored := map[string]map[string]any{}
	var payments []any
	srv := mcp.NewServer(&mcp.Implementation{Name: "pay", Version: "1.0.0"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"},"idempotencyKey":{"type":"string"}}}`)
	srv.AddTool(&mcp.Tool{Name: "pay", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &args)
		key, _ := args["idempotencyKey"].(string)
		mu.Lock()
		prev, ok := stored[key]
		mu.Unlock()
		if ok {
			return &mcp.CallToolResult{StructuredContent: prev, Content: []mcp.Content{&mcp.TextContent{Text: "replayed"}}, Meta: mcp.Meta{"idempotentReplayed": true}}, nil
		}
		// The work outlasts the give-up (a quarter of it) by three quarters of a second, so a
		// client on a busy machine still gives up before it is done and the call is dropped.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
		mu.Lock()
		defer mu.Unlock()
		out := map[string]any{"paymentId": "p_" + randomHex(), "amount": args["amount"]}
		payments = append(payments, out)
		stored[key] = out
		return &mcp.CallToolResult{StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: "paid"}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "list_payments", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			return &mcp.CallToolResult{StructuredContent: map[string]any{"payments": append([]any{}, payments...)}, Content: []mcp.Content{&mcp.TextContent{Text: "listed"}}}, nil
		})
	return endpointtest.ServeMCP(t, srv)
}

// TestTimeoutNeedsTheCallInFlight: the retry was not marked as a replay and the payments listed
// are run 0's: one execution in all, whether the call given up on never ran or was replayed
// unmarked; that proves nothing about a server that executes what comes while a call works. The
// cell is ?, after faultTries runs, never ✓.
func TestTimeoutNeedsTheCallInFlight(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	calls := []trace.Call{
		{Seq: 1, Tool: "pay", Args: raw(`{"amount":5,"idempotencyKey":"s-1"}`), Key: "s-1", KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: "ok", Result: raw(`{"paymentId":"p_rec","amount":5}`)},
	}
	base, err := scenario.AdHocScenario(context.Background(), scenario.AdHoc{MCPURL: payServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), base, "pay.jsonl", calls, Options{Endpoint: scenario.AdHocName})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cells {
		if c.Fault != Timeout {
			continue
		}
		want := "the retry after the client gave up was not marked as a replay, and what was compared is run 0's: one execution in all, so either the call given up on never ran"
		if c.Status != matrix.Inconclusive || !strings.Contains(c.Reason, want) || !strings.HasSuffix(c.Reason, fmt.Sprintf("(%d runs, none with the call in flight)", faultTries)) {
			t.Errorf("timeout: %s %q, want ? %q after every run\n%s", c.Status, c.Reason, want, strings.Join(c.Details, "\n"))
		}
		return
	}
	t.Fatal("no timeout cell")
}
