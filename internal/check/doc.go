// Package check is idemtest check, the conformance battery (DESIGN §9): for every mutating tool
// of an endpoint it builds ordinary in-memory scenarios (replay, lost-response, concurrent,
// payload-mismatch, distinct-keys, missing-key, annotations), runs them through the runner on one
// started environment, and judges each cell from the exactly-once verdict, status codes and the
// state read from the server's read-only tools.
//
//	base, _ := scenario.LoadConfig(".", scenario.Options{})
//	rep, err := check.Run(ctx, base, check.Options{Endpoint: "refunds"})
//	reporters.CheckMatrix(os.Stdout, rep, false)
//	paths, err := check.Write("scenarios/check", rep.Specs(), nil) // what ran, as scenario files
package check
