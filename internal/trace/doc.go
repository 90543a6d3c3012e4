// Package trace reads and writes idemtest traces: JSON Lines, a versioned header, then one line
// per tool call with its key, outcome and the fault injected on it, if any. The proxy writes
// them; a trace is what the agent verdict and a later sweep read.
//
//	w, err := trace.NewWriter(f, trace.Header{Endpoint: "node server.js", Transport: "mcp-stdio"})
//	err = w.Write(trace.Call{Seq: 1, Tool: "issue_refund", Args: args, Key: "s1-0", Outcome: outcome.OK})
//
//	h, calls, err := trace.Read(f)
package trace
