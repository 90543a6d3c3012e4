// Package proxy sits between a real agent and its tools: it forwards every message, records
// the tool calls as a trace, injects faults on chosen calls, and judges whether the agent
// reuses its idempotency key when it retries.
//
//	rec := proxy.NewRecorder(proxy.Options{Key: scenario.KeySpec{Arg: "idempotencyKey"},
//		Faults: []proxy.Fault{{Kind: proxy.LoseResponse, Tool: "issue_refund", N: 1}}})
//	err := proxy.RunStdio(ctx, rec, os.Stdin, os.Stdout, proxy.StdioConfig{Command: []string{"node", "server.js"}})
//	calls, _ := rec.Close()
//	v := proxy.Judge(calls, proxy.JudgeOptions{})
//	proxy.WriteText(os.Stderr, v)
package proxy
