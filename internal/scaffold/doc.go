// Package scaffold writes starting scenarios for a tool from what its server says about it:
// example arguments from the input schema, and the standard retry-safety steps.
//
//	src := scaffold.Scenario(tool, scaffold.Options{Endpoint: "refunds", KeyArg: "idempotencyKey"})
//	os.WriteFile("issue_refund.yaml", src, 0o644)
package scaffold
