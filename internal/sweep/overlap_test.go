package sweep

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/endpoint/endpointtest"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	runresult "github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/trace"
)

func TestMain(m *testing.M) {
	// TestDuplicateNeedsOverlap runs this test binary as its MCP server over stdio.
	if os.Getenv("SWEEP_TEST_SERIAL_SERVER") == "1" {
		serialServer(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestCopiesApart(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	for _, tc := range []struct {
		name         string
		copies       []runresult.Call
		missed, note string
		wantOverlap  bool
	}{
		{name: "both sent before either answered", wantOverlap: true, note: "the 2 copies overlapped: all were sent within 100µs, before the first answer",
			copies: []runresult.Call{{Copy: 1, Sent: at(0), Answered: at(50)}, {Copy: 2, Sent: at(0.1), Answered: at(51)}}},
		{name: "the second sent after the first answered", missed: "the copies did not overlap: copy 1 was answered 50ms after it was sent, 10ms before the last copy was sent",
			copies: []runresult.Call{{Copy: 1, Sent: at(0), Answered: at(50)}, {Copy: 2, Sent: at(60), Answered: at(61)}}},
		{name: "copies listed out of order", missed: "copy 2 was answered 5ms after it was sent, 5ms before the last copy was sent",
			copies: []runresult.Call{{Copy: 1, Sent: at(10), Answered: at(20)}, {Copy: 2, Sent: at(0), Answered: at(5)}}},
		{name: "an in-progress conflict proves the other in flight", wantOverlap: true, note: "1 answered in progress",
			copies: []runresult.Call{{Copy: 1, Sent: at(0), Answered: at(50)}, {Copy: 2, Sent: at(0.1), Answered: at(1), Conflict: true}}},
		{name: "a 409 saying the key completed proves nothing in flight", missed: "copy 1 was answered 1ms after it was sent, 1ms before the last copy was sent",
			copies: []runresult.Call{{Copy: 1, Sent: at(0), Answered: at(1), Conflict: true, Status: 409, Result: map[string]any{"error": "duplicate request"}}, {Copy: 2, Sent: at(2), Answered: at(50)}}},
		{name: "a 409 saying in progress proves the other in flight", wantOverlap: true, note: "1 answered in progress",
			copies: []runresult.Call{{Copy: 1, Sent: at(0), Answered: at(50)}, {Copy: 2, Sent: at(0.1), Answered: at(1), Conflict: true, Status: 409, Result: map[string]any{"code": "idempotency_key_in_progress"}}}},
		{name: "a 425 saying in progress proves the other in flight", wantOverlap: true, note: "1 answered in progress",
			copies: []runresult.Call{{Copy: 1, Sent: at(0), Answered: at(50)}, {Copy: 2, Sent: at(0.1), Answered: at(1), Outcome: outcome.Fail, Status: 425, Result: map[string]any{"code": "idempotency_key_in_progress"}}}},
		{name: "no send time", missed: "copy 2 of 2 has no send time",
			copies: []runresult.Call{{Copy: 1, Sent: at(0), Answered: at(50)}, {Copy: 2}}},
		{name: "one copy", missed: "only one copy was sent", copies: []runresult.Call{{Copy: 1, Sent: at(0), Answered: at(5)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			missed, note := copiesApart(tc.copies)
			if (missed == "") != tc.wantOverlap || !strings.Contains(missed, tc.missed) || !strings.Contains(note, tc.note) {
				t.Errorf("copiesApart = %q, %q; want missed %q, note %q", missed, note, tc.missed, tc.note)
			}
		})
	}
}

// barrierServer is a real MCP server whose pay tool holds each call until a second call with its
// key is in flight (or a second has passed, for a call that has no duplicate: run 0's, a lost
// response's): the copies of a duplicate run overlap, and a call given up on is still held when
// its retry comes, whatever the machine's pace (a client that gives up is not heard: the call
// works on, as a server's does). Naive, it checks the key, waits, executes and stores, so both
// copies execute, and so do a call given up on and its retry; locked, the first reserves the key
// and the second is told it is in progress.
func barrierServer(t *testing.T, locked bool) string {
	var mu sync.Mutex
	stored := map[string]map[string]any{}
	reserved := map[string]bool{}
	arrived := map[string]int{}
	met := map[string]chan struct{}{}
	var payments []any
	srv := mcp.NewServer(&mcp.Implementation{Name: "pay", Version: "1.0.0"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"},"idempotencyKey":{"type":"string"}}}`)
	srv.AddTool(&mcp.Tool{Name: "pay", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &args)
		key, _ := args["idempotencyKey"].(string)
		mu.Lock()
		arrived[key]++
		if met[key] == nil {
			met[key] = make(chan struct{})
		}
		ch := met[key]
		if arrived[key] == 2 {
			close(ch)
		}
		if prev, ok := stored[key]; ok {
			mu.Unlock()
			return &mcp.CallToolResult{StructuredContent: prev, Content: []mcp.Content{&mcp.TextContent{Text: "replayed"}}, Meta: mcp.Meta{"idempotentReplayed": true}}, nil
		}
		if locked && reserved[key] {
			mu.Unlock()
			return &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"code": "idempotency_key_in_progress"},
				Content: []mcp.Content{&mcp.TextContent{Text: "a request with this key is in progress"}}}, nil
		}
		reserved[key] = true
		mu.Unlock()
		// The barrier: the window between the check and the store, held open until a second
		// call with the key arrives.
		hold(ctx, ch, time.Second)
		time.Sleep(20 * time.Millisecond) // the work; nothing is ordered by it
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

// hold holds a call until met is closed (a second call with its key came) or, while its client
// waits, work has passed (a call that has no duplicate: run 0's, a lost response's). A call whose
// client gave up (its context is cancelled) is held until the second call comes, its retry,
// however late the client sends it: the retry meets it in flight whatever the machine's pace.
func hold(ctx context.Context, met <-chan struct{}, work time.Duration) {
	select {
	case <-met:
	case <-time.After(work):
	case <-ctx.Done():
		select {
		case <-met:
		case <-time.After(30 * time.Second): // a retry that never comes
		}
	}
}

// bigLog is a log message far larger than a pipe (64KiB) and the client's read buffer hold.
var bigLog = strings.Repeat("l", 2<<20)

// bigNote is an argument larger than a pipe holds: over stdio a copy carrying it is written only
// as fast as the server reads it.
var bigNote = strings.Repeat("n", 512<<10)

func payTrace(note string) []trace.Call {
	args, _ := json.Marshal(map[string]any{"amount": 5, "note": note, "idempotencyKey": "s-1"})
	return []trace.Call{
		{Seq: 1, Tool: "pay", Args: args, Key: "s-1", KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: "ok", Result: json.RawMessage(`{"paymentId":"p_rec","amount":5}`)},
	}
}

// serialWork is how long the serial server's pay call works: longer than the timeout fault's
// shortest give-up (minGiveUp) many times over, so a client gives up on it and retries while it
// works, and the retry waits in the pipe until it is done.
const serialWork = 200 * time.Millisecond

// serialServer is an MCP server over stdio that reads a request only once it has answered the
// one before. After answering a pay call it writes a small notification and then one larger than
// the pipe and the client's read buffer, and reads on only once that one is taken: the client
// reads messages in order and stamps each answer when it reads it, before it reads the next
// message, so the client has taken (and timed) the answer before the server reads the next
// request. The second copy of a duplicate (an argument larger than the pipe) is thus written
// only after the first was answered: its copies never overlap; a retry after a client timeout
// is read only once the call given up on is done: it never meets it in flight. Its pay tool is
// naive (check, execute, store), which serial handling hides.
func serialServer(in *os.File, out *os.File) {
	r := bufio.NewReader(in)
	stored := map[string]map[string]any{}
	var payments []any
	n := 0
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string         `json:"protocolVersion"`
				Name            string         `json:"name"`
				Arguments       map[string]any `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 {
			continue // a notification
		}
		var result any
		paid := false
		switch req.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": req.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "serial", "version": "1"}}
		case "tools/list":
			result = map[string]any{"tools": []any{
				map[string]any{"name": "pay", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "list_payments", "inputSchema": map[string]any{"type": "object"}, "annotations": map[string]any{"readOnlyHint": true}},
			}}
		case "tools/call":
			if req.Params.Name == "list_payments" {
				result = map[string]any{"structuredContent": map[string]any{"payments": append([]any{}, payments...)}, "content": []any{map[string]any{"type": "text", "text": "listed"}}}
				break
			}
			key, _ := req.Params.Arguments["idempotencyKey"].(string)
			if prev, ok := stored[key]; ok {
				result = map[string]any{"structuredContent": prev, "content": []any{map[string]any{"type": "text", "text": "replayed"}}, "_meta": map[string]any{"idempotentReplayed": true}}
				break
			}
			time.Sleep(serialWork) // the work; nothing is ordered by it
			n++
			p := map[string]any{"paymentId": fmt.Sprintf("p_%d_%s", n, randomHex()), "amount": req.Params.Arguments["amount"]}
			payments = append(payments, p)
			stored[key] = p
			result = map[string]any{"structuredContent": p, "content": []any{map[string]any{"type": "text", "text": "paid"}}}
			paid = true
		default:
			result = map[string]any{}
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
		_, _ = out.Write(append(b, '\n'))
		if paid {
			// The client has read the answer once it reads past the small notification: the
			// large one is taken only then, and this write returns only once it is.
			for _, note := range []string{"answered", bigLog} {
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "debug", "data": note}})
				_, _ = out.Write(append(b, '\n'))
			}
		}
	}
}

// TestDuplicateNeedsOverlap: a duplicate cell is ✗ when both copies executed, ✓ when the copies
// overlapped and one executed, and ? (never ✓) when the copies never overlapped, whatever the
// server did with them.
func TestDuplicateNeedsOverlap(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: every run of the serial server pauses half a second after each payment")
	}
	t.Setenv("SWEEP_TEST_SERIAL_SERVER", "1")
	for _, tc := range []struct {
		name   string
		base   scenario.AdHoc
		note   string
		status matrix.Status
		reason string
	}{
		{"naive, copies held until both arrive", scenario.AdHoc{MCPURL: barrierServer(t, false)}, "", matrix.Fail, "executed 2 times"},
		{"locked, copies held until both arrive", scenario.AdHoc{MCPURL: barrierServer(t, true)}, "", matrix.Pass, "the 2 copies overlapped"},
		{"serial: the second copy read after the first answered", scenario.AdHoc{MCPCommand: []string{os.Args[0]}}, bigNote, matrix.Inconclusive,
			fmt.Sprintf("the copies never overlapped in %d runs; in the last, copy ", faultTries)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := scenario.AdHocScenario(context.Background(), tc.base)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(context.Background(), base, "pay.jsonl", payTrace(tc.note), Options{Endpoint: scenario.AdHocName})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Baseline.Status != matrix.Pass {
				t.Fatalf("run 0: %s %s\n%s", rep.Baseline.Status, rep.Baseline.Reason, strings.Join(rep.Baseline.Details, "\n"))
			}
			for _, c := range rep.Cells {
				if c.Fault != Duplicate {
					continue
				}
				if c.Status != tc.status || !strings.Contains(c.Reason, tc.reason) {
					t.Errorf("duplicate: %s %q, want %s %q\n%s", c.Status, c.Reason, tc.status, tc.reason, strings.Join(c.Details, "\n"))
				}
				return
			}
			t.Fatal("no duplicate cell")
		})
	}
}

// TestTimeoutProvesInFlight: a timeout cell is ✓ only when the retry met the call given up on in
// flight (an attempt answered in progress), ✗ when both executed, and ? (never ✓) when the retry
// only ever got the stored answer of a call that had finished: a server that takes one request
// at a time, whose retry waits in the pipe until the call given up on is done.
func TestTimeoutProvesInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the barrier server holds run 0's call a second, the serial server works 200ms on each payment")
	}
	t.Setenv("SWEEP_TEST_SERIAL_SERVER", "1")
	for _, tc := range []struct {
		name   string
		base   scenario.AdHoc
		status matrix.Status
		reason string
	}{
		// The answer of the call given up on is not seen: the state shows its payment.
		{"naive, the call given up on held until its retry comes", scenario.AdHoc{MCPURL: barrierServer(t, false)}, matrix.Fail, "diverged: list_payments (state after the run): the change differs from run 0's at payments"},
		{"locked, the call given up on held until its retry comes", scenario.AdHoc{MCPURL: barrierServer(t, true)}, matrix.Pass, "answered in progress"},
		{"serial: the retry read after the call given up on is done", scenario.AdHoc{MCPCommand: []string{os.Args[0]}}, matrix.Inconclusive,
			fmt.Sprintf("none of the retry's 1 attempt(s) was answered in progress, and it got the stored answer, so the call given up on had finished before the server took the retry (it came too late, or the server takes one request at a time): the run tested a replay, not a duplicate in flight (%d runs, none with the call in flight)", faultTries)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := scenario.AdHocScenario(context.Background(), tc.base)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(context.Background(), base, "pay.jsonl", payTrace(""), Options{Endpoint: scenario.AdHocName})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Baseline.Status != matrix.Pass {
				t.Fatalf("run 0: %s %s\n%s", rep.Baseline.Status, rep.Baseline.Reason, strings.Join(rep.Baseline.Details, "\n"))
			}
			for _, c := range rep.Cells {
				if c.Fault != Timeout {
					continue
				}
				if c.Status != tc.status || !strings.Contains(c.Reason, tc.reason) {
					t.Errorf("timeout: %s %q, want %s %q\n%s", c.Status, c.Reason, tc.status, tc.reason, strings.Join(c.Details, "\n"))
				}
				return
			}
			t.Fatal("no timeout cell")
		})
	}
}

// TestInProgress: one classifier says whether an answer proves a call with its key in progress,
// whatever the transport and status.
func TestInProgress(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    runresult.Call
		want bool
	}{
		{"HTTP 409 saying in progress", runresult.Call{Outcome: outcome.Fail, Status: 409, Conflict: true, Result: map[string]any{"code": "idempotency_key_in_progress"}}, true},
		{"HTTP 409 with no body", runresult.Call{Outcome: outcome.Fail, Status: 409, Conflict: true}, true},
		{"HTTP 409 saying the key completed", runresult.Call{Outcome: outcome.Fail, Status: 409, Conflict: true, Result: map[string]any{"error": "duplicate request"}}, false},
		{"HTTP 425 saying in progress", runresult.Call{Outcome: outcome.Fail, Status: 425, Result: map[string]any{"code": "idempotency_key_in_progress"}}, true},
		{"HTTP 429 saying slow down", runresult.Call{Outcome: outcome.Fail, Status: 429, Result: map[string]any{"error": "rate limited"}}, false},
		{"MCP tool error saying in progress", runresult.Call{Outcome: outcome.Fail, Conflict: true, Result: "a request with this key is in progress"}, true},
		{"MCP tool error saying duplicate request", runresult.Call{Outcome: outcome.Fail, Result: "duplicate request"}, false},
		{"an answer", runresult.Call{Outcome: outcome.OK, Status: 200, Result: map[string]any{"message": "in progress"}}, false},
	} {
		if got := inProgress(tc.c); got != tc.want {
			t.Errorf("%s: inProgress = %v, want %v", tc.name, got, tc.want)
		}
	}
}
