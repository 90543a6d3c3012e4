// Package runner runs loaded scenarios: it starts their services, builds their endpoints, runs
// every trial with a fresh session, sends calls with the right idempotency keys (retries reuse
// the original's, fan-out copies share one and are released together), evaluates assertions and
// keeps the history of every call for the reporters, in the model of package result.
//
//	rep := runner.Run(ctx, scenarios, runner.Options{Parallel: 2})
//	if rep.Failed() { ... }
//
// Run stops every service it started on every path out, cancellation included. The services'
// processes are supervised by package service, probes are evaluated by package probe and the
// endpoints are built by package endpoints; the runner wires them into an Env with the sinks.
package runner
