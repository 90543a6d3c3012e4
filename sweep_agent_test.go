//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdMCPSession is an agent session on the official Go MCP SDK, for the sweep scripts:
// "mcpsession CALLS -- COMMAND ARGS...". It starts COMMAND as its MCP server over stdio (usually
// "idemtest proxy --record FILE -- SERVER"), makes the calls in the file CALLS in order, one a
// line as "TOOL {json arguments}" with $VARS expanded (the agent's keys are in the arguments),
// and prints each answer as "N TOOL ok|error TEXT". A successful answer's top-level string
// fields are set as $rN_FIELD (${r1_chargeId}), for later lines and the rest of the script.
func cmdMCPSession(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 || args[1] != "--" {
		ts.Fatalf("usage: mcpsession CALLS -- COMMAND [ARGS...]")
	}
	argv := args[2:]
	conn := connectAgent(ts, "mcpsession", argv)
	defer conn.cancel()
	ctx, cs := conn.ctx, conn.cs
	n := 0
	for _, line := range strings.Split(ts.ReadFile(args[0]), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		tool, raw, _ := strings.Cut(os.Expand(line, ts.Getenv), " ")
		var a map[string]any
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			ts.Fatalf("%s line %d: %v", args[0], n, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
		switch {
		case err != nil:
			fmt.Fprintf(ts.Stdout(), "%d %s error %v\n", n, tool, err)
		default:
			var text strings.Builder
			for _, ct := range res.Content {
				if t, ok := ct.(*mcp.TextContent); ok {
					text.WriteString(t.Text)
				}
			}
			word := "ok"
			if res.IsError {
				word = "error"
			}
			fmt.Fprintf(ts.Stdout(), "%d %s %s %s\n", n, tool, word, strings.ReplaceAll(text.String(), "\n", " "))
			// The answer's top-level strings become $rN_FIELD for later lines, as an agent
			// passes a returned id on.
			if m, ok := res.StructuredContent.(map[string]any); ok && !res.IsError {
				for k, v := range m {
					if sv, ok := v.(string); ok {
						ts.Setenv(fmt.Sprintf("r%d_%s", n, k), sv)
					}
				}
			}
		}
	}
	_ = cs.Close()
	fmt.Fprint(ts.Stderr(), conn.stderr.String())
}
