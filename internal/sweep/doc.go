// Package sweep turns a recorded agent session (a trace, DESIGN §10) into a fault sweep against
// the server: run 0 replays the trace's calls in order with fresh keys, then for each mutating
// call one run loses that call's response and retries it with its key, one sends it as two
// concurrent copies with one key, and one gives up on it after a client timeout while the server
// still works and retries it at once with its key. Every run is an ordinary scenario run by the runner, and its
// final evidence (the exactly-once verdict, every call's outcome, the state shown by read-only
// tools, the sinks) must equal run 0's.
//
//	_, calls, _ := trace.ReadFile(ctx, "session.jsonl")
//	rep, err := sweep.Run(ctx, base, "session.jsonl", calls, sweep.Options{Endpoint: "refunds"})
package sweep
