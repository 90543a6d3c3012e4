// Package check is idemtest check, the conformance battery (DESIGN §9): for every mutating tool
// of an endpoint it builds ordinary in-memory scenarios (the ids in IDs: replay, lost-response,
// timeout-retry, concurrent, payload-mismatch, mismatch-in-flight, distinct-keys, key-scope,
// missing-key, errors-not-replayed, expiry, annotations), runs them through the runner on one
// started environment, and judges each cell from the declared effects, the sinks, the state read
// from the server's read-only tools or configured snapshot calls, the exactly-once verdict and
// status codes.
//
//	base, _ := load.Config(".", load.Options{})
//	rep, err := check.Run(ctx, base, check.Options{Endpoint: "refunds"})
//	reporters.CheckMatrix(os.Stdout, rep, false)
//	paths, err := check.Write("scenarios/check", rep.Specs(), nil) // what ran, as scenario files
package check
