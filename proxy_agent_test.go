//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/idemtest/idemtest/internal/trace"
)

// cmdMCPAgent is an agent built on the official Go MCP SDK, for the proxy scripts:
// "mcpagent [--http] reuse|new-key|stamp ACCOUNT -- COMMAND ARGS...". It starts COMMAND as its
// MCP server over stdio (usually "idemtest proxy ... -- refundserver --stdio"), or with --http
// starts COMMAND (an "idemtest proxy --listen 127.0.0.1:0 ...") and connects to it over
// streamable HTTP, stopping it with SIGTERM at the end; it issues one refund with a
// retry loop of 3 attempts of 2s each (the same key every attempt, or a new key per attempt, or
// the same key with the attempt's number in stats.count and items.n, as an agent that stamps
// each request does), then
// prints how many refunds the server executed for ACCOUNT and how the command exited. The
// command's stderr goes to the script's stderr.
func cmdMCPAgent(ts *testscript.TestScript, neg bool, args []string) {
	connect := connectAgent
	if len(args) > 0 && args[0] == "--http" {
		connect, args = connectAgentHTTP, args[1:]
	}
	if neg || len(args) < 4 || args[2] != "--" || (args[0] != "reuse" && args[0] != "new-key" && args[0] != "stamp") {
		ts.Fatalf("usage: mcpagent [--http] reuse|new-key|stamp ACCOUNT -- COMMAND [ARGS...]")
	}
	reuse, stamp, acct, argv := args[0] != "new-key", args[0] == "stamp", args[1], args[3:]
	conn := connect(ts, "mcpagent", argv)
	defer conn.cancel()
	defer conn.stop()
	ctx, cs := conn.ctx, conn.cs
	key := "sess-1"
	for attempt := 1; attempt <= 3; attempt++ {
		if attempt > 1 && !reuse {
			key = fmt.Sprintf("sess-1-attempt%d", attempt)
		}
		arguments := map[string]any{"accountId": acct, "amount": 49.99, "idempotencyKey": key}
		if stamp {
			arguments["stats"] = map[string]any{"count": attempt}
			arguments["items"] = []any{map[string]any{"n": attempt}}
		}
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		res, err := cs.CallTool(actx, &mcp.CallToolParams{Name: "issue_refund", Arguments: arguments})
		acancel()
		if err == nil && !res.IsError {
			break
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_refunds", Arguments: map[string]any{"accountId": acct}})
	if err != nil {
		conn.stop()
		ts.Fatalf("list_refunds: %v\n%s", err, conn.stderr.String())
	}
	b, _ := json.Marshal(res.StructuredContent)
	var listed struct {
		Refunds []any `json:"refunds"`
	}
	ts.Check(json.Unmarshal(b, &listed))
	_ = cs.Close()
	conn.stop()
	fmt.Fprintf(ts.Stdout(), "server executed %d refund(s) for %s\n", len(listed.Refunds), acct)
	fmt.Fprintf(ts.Stdout(), "%s exited %d\n", argv[0], conn.server.ProcessState.ExitCode())
	fmt.Fprint(ts.Stderr(), conn.stderr.String())
}

// cmdReadTrace reads a trace with the trace package, as sweep will: "readtrace FILE". It prints
// the header's endpoint, the number of calls, then one line per call: seq, trial, step, tool,
// key carrier, key, outcome, then "replayed" and the fault when there are any, and the args.
func cmdReadTrace(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: readtrace FILE")
	}
	h, calls, err := trace.ReadFile(context.Background(), ts.MkAbs(args[0]))
	if neg {
		if err == nil {
			ts.Fatalf("readtrace %s: read without error", args[0])
		}
		return
	}
	ts.Check(err)
	var b strings.Builder
	fmt.Fprintf(&b, "endpoint %s\n%d calls\n", h.Endpoint, len(calls))
	for _, c := range calls {
		fmt.Fprintf(&b, "%d trial=%d step=%s %s %s key=%s %s", c.Seq, c.Trial, c.Step, c.Tool, c.KeyCarrier, c.Key, c.Outcome)
		if c.Replayed {
			b.WriteString(" replayed")
		}
		if c.Fault != "" {
			b.WriteString(" fault=" + c.Fault)
		}
		if c.Instance != nil {
			fmt.Fprintf(&b, " instance=%d", c.Instance.Index)
		}
		fmt.Fprintf(&b, " args=%s\n", c.Args)
	}
	ts.Stdout().Write([]byte(b.String()))
}
