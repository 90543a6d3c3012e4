// Package mcp is the MCP implementation of endpoint.Endpoint: a server started as a command and
// spoken to over stdio, or reached at a streamable HTTP URL. All calls share one session;
// concurrent calls are concurrent JSON-RPC requests on it. Each call gets an outcome of its own,
// as an HTTP call does: a tool result is ok, or fail when isError; an HTTP error status, a
// redirect, a lost connection or an oversized answer is judged by whether the request was
// written, and the session carries on.
//
//	ep := mcp.New(mcp.Config{Command: []string{"node", "server.js"}, KeyArg: "idempotencyKey"})
//	defer ep.Close()
//	tools, err := ep.Tools(ctx)
//	res := ep.Call(ctx, endpoint.Request{Tool: "issue_refund", Args: args, Key: "s1-0"})
package mcp
