// Package result is the model of a run's outcome: the Report of a run, each scenario's
// ScenarioResult over its trials, every Trial with the history of its Calls, the Failure that
// ended a trial (its FailureKind, its step and line), the Metrics of idempotency behaviour and
// the calls the exactly-once verdict did not judge (Unjudged). Package runner fills it in;
// reporters, check, sweep and the commands read it.
//
// # A call's five shapes
//
// One call is five structs, one per stage, in pipeline order:
//
//  1. endpoint.Result: what the wire gave (outcome, status, body, headers, instants), returned
//     by an Endpoint.
//  2. result.Call (here): the call in a trial's history, with its step, copy, attempt and key;
//     what reports, check and sweep read, and the JSON report writes (as its JSONCall).
//  3. assert.CallResult: what an expression sees of a call step ({{ first.result.id }},
//     retry.replayed), typed for expr.
//  4. verdict.Call: what the exactly-once verdict judges, with the endpoint's compare.ignore.
//  5. trace.Call: a line of a trace file, written by the proxy and by run --trace, read by the
//     agent verdict and sweep.
//
// The runner makes 2, 3 and 4 from 1; runtrace makes 5 from 2. They stay apart because each
// consumer must not import the producer before it (assert and verdict are leaves), and 5 is a
// file format users parse, which no change of the model may move.
package result
