package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/cmd"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/trace"
)

// agentThroughProxy runs idemtest proxy in front of s, losing the answer of the first refund,
// and an agent (the Go MCP SDK client) that retries its refund until it is answered, under a
// new key each time when fresh. It returns the agent's attempts and MCP session once the proxy
// has stopped and written its record.
func agentThroughProxy(t *testing.T, s *instrumented, record string, fresh bool) (attempts int, session string) {
	t.Helper()
	ctx, stopProxy := context.WithCancel(context.Background())
	defer stopProxy()
	errOut := &listenWriter{addr: make(chan string, 1)}
	ios, out, _ := iostreams.Test()
	ios.ErrOut = errOut
	done := make(chan cmd.ExitCode, 1)
	go func() {
		done <- cmd.Execute(ctx, &cmd.Factory{IO: ios, Version: "test"}, []string{"proxy",
			"--listen", "127.0.0.1:0", "--upstream", s.URL + "/mcp", "--record", record,
			"--fault", "lose-response:issue_refund#1", "--hold", "50ms"})
	}()
	var proxyURL string
	select {
	case addr := <-errOut.addr:
		proxyURL = "http://" + addr
	case code := <-done:
		t.Fatalf("proxy exited %d: %s", code, errOut.String())
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: proxyURL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := "refund-1"
	for {
		attempts++
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "issue_refund",
			Arguments: map[string]any{"accountId": "acct_agent", "amount": 25, "idempotencyKey": key}})
		if err == nil && !res.IsError {
			break
		}
		t.Logf("attempt %d under key %s: %v", attempts, key, err)
		if attempts == 3 {
			t.Fatal("the refund was never answered")
		}
		if fresh {
			key = fmt.Sprintf("refund-%d", attempts+1)
		}
	}
	session = cs.ID()
	cs.Close()
	stopProxy()
	code := <-done
	t.Logf("proxy: exit %d\n%s%s", code, out, errOut)
	return attempts, session
}

// TestAuditFindsFreshKeyRetryThroughProxy: an agent (the official Go MCP SDK client) calls the
// instrumented reference server through idemtest proxy, which loses the answer of its first
// refund. An agent that mints a new key for its retry charges twice: auditing the server's
// exported spans, with the proxy's record as the agent's side, finds "retried under a fresh
// key" naming both calls' spans. The same agent reusing its key gets a replay and no finding.
// The proxy gave each call a traceparent (the agent sent none), so the record's trace ids are
// the server's.
func TestAuditFindsFreshKeyRetryThroughProxy(t *testing.T) {
	for _, fresh := range []bool{true, false} {
		t.Run(map[bool]string{true: "fresh key", false: "same key"}[fresh], func(t *testing.T) {
			s := startInstrumented(t, "--idempotency", "locked")
			record := filepath.Join(t.TempDir(), "agent.trace")
			attempts, session := agentThroughProxy(t, s, record, fresh)
			truth := s.ledger(t)
			s.Stop(t)
			if attempts != 2 {
				t.Fatalf("the agent made %d attempts, want 2 (the first answer lost)", attempts)
			}
			wantRefunds := map[bool]int{true: 2, false: 1}[fresh]
			if n := truth["refund-1"] + truth["refund-2"]; n != wantRefunds {
				t.Fatalf("the server executed %d refunds (%v), want %d", n, truth, wantRefunds)
			}

			// The proxy's record names, per call, the trace the server's span is in.
			_, recorded, err := trace.ReadFile(context.Background(), record)
			if err != nil {
				t.Fatal(err)
			}
			spanOf := map[string]exportedSpan{}
			for _, sp := range readSpans(t, s.Spans) {
				if sp.Attrs["mcp.method.name"] == "tools/call" {
					spanOf[sp.TraceID] = sp
				}
			}
			var spans []exportedSpan
			for _, c := range recorded {
				if c.Tool != "issue_refund" {
					continue
				}
				sp, ok := spanOf[c.TraceID]
				if !ok || !strings.Contains(sp.Attrs["gen_ai.tool.call.arguments"], c.Key) || sp.Attrs["mcp.session.id"] != session {
					t.Fatalf("recorded call (key %s, trace %q) has no tools/call span of its key and session on the server: %v", c.Key, c.TraceID, sp)
				}
				spans = append(spans, sp)
			}
			if len(spans) != 2 || recorded[0].Fault == "" {
				t.Fatalf("recorded %d refund calls (%+v), want 2, the first one's answer lost", len(spans), recorded)
			}

			code, rep := auditFile(t, s.Spans, "--agent-trace", record, "--max-hit-rate", "off")
			var retries []map[string]any
			for _, f := range rep["findings"].([]any) {
				fm := f.(map[string]any)
				if fm["kind"] != "fresh-key-retry" {
					t.Errorf("unexpected finding: %v", fm)
					continue
				}
				retries = append(retries, fm)
			}
			if !fresh {
				if code != cmd.ExitOK || len(retries) != 0 {
					t.Errorf("an agent reusing its key: exit %d, findings %v; want 0 and none", code, rep["findings"])
				}
				return
			}
			if code != cmd.ExitFailed || len(retries) != 1 {
				t.Fatalf("exit %d, %d fresh-key retries; want 1 and one", code, len(retries))
			}
			calls := retries[0]["calls"].([]any)
			if len(calls) != 2 {
				t.Fatalf("finding names %d calls, want 2", len(calls))
			}
			for i, c := range calls {
				cm := c.(map[string]any)
				if cm["span_id"] != spans[i].SpanID || cm["trace_id"] != spans[i].TraceID {
					t.Errorf("finding call %d: span %v in trace %v; the server's span of the call is %s in %s", i, cm["span_id"], cm["trace_id"], spans[i].SpanID, spans[i].TraceID)
				}
			}
			// The server's spans alone show two good answers: only the agent's side tells that
			// the first never arrived.
			if _, rep := auditFile(t, s.Spans, "--max-hit-rate", "off"); len(rep["findings"].([]any)) != 0 {
				t.Errorf("without the agent's trace: findings %v, want none", rep["findings"])
			}
		})
	}
}
