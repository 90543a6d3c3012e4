// Package proxy sits between a real agent and its tools: it forwards every message, writes
// each tool call to the trace as it completes, keeps of it only its digest for the verdict
// (agentverdict.Calls: memory that stays flat over a session of any length) and injects
// faults on chosen calls. Package agentverdict below it judges the recorded calls (does the agent reuse its idempotency key when it retries?); the
// reports of that verdict are written by the reporters (terminal, junit, jsonreport).
//
//	rec := proxy.NewRecorder(proxy.Options{Key: scenario.KeySpec{Arg: "idempotencyKey"},
//		Faults: []fault.Fault{{Kind: fault.LoseResponse, Tool: "issue_refund", N: 1}}})
//	err := proxy.RunStdio(ctx, rec, os.Stdin, os.Stdout, proxy.StdioConfig{Command: []string{"node", "server.js"}})
//	calls, _ := rec.Close()
//	v, _ := agentverdict.JudgeCalls(ctx, calls, agentverdict.JudgeOptions{})
//	terminal.WriteProxy(os.Stderr, v)
package proxy
