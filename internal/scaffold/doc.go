// Package scaffold writes starting scenarios for a tool from what its server says about it:
// example arguments from the input schema, and the standard retry-safety steps. A Project is
// what idemtest init writes: a scenario per mutating tool, and the idemtest.yaml of an endpoint
// given on the command line.
//
//	src := scaffold.Scenario(tool, scaffold.Options{Endpoint: "refunds", KeyArg: "idempotencyKey"})
//	os.WriteFile("issue_refund.yaml", src, 0o644)
package scaffold
