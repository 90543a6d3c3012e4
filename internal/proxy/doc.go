// Package proxy sits between a real agent and its tools: it forwards every message, records
// the tool calls as a trace and injects faults on chosen calls. Package agentverdict below it
// judges the recorded calls (does the agent reuse its idempotency key when it retries?); the
// reports of that verdict are written by the reporters (terminal, junit, jsonreport).
//
//	rec := proxy.NewRecorder(proxy.Options{Key: scenario.KeySpec{Arg: "idempotencyKey"},
//		Faults: []fault.Fault{{Kind: fault.LoseResponse, Tool: "issue_refund", N: 1}}})
//	err := proxy.RunStdio(ctx, rec, os.Stdin, os.Stdout, proxy.StdioConfig{Command: []string{"node", "server.js"}})
//	calls, _ := rec.Close()
//	v := agentverdict.Judge(calls, agentverdict.JudgeOptions{})
//	terminal.WriteProxy(os.Stderr, v)
package proxy
