// Package endpoint talks to tool servers and classifies every call's outcome in Jepsen's sense:
// ok (it definitely happened), fail (it definitely did not) or info (indeterminate).
//
//	ep, err := endpoint.NewHTTP(endpoint.HTTPConfig{URL: "http://127.0.0.1:8080/tools/{tool}", KeyHeader: "Idempotency-Key"})
//	res := ep.Call(ctx, endpoint.Request{Tool: "issue_refund", Args: args, Key: "s1-0"})
//	fmt.Println(res.Outcome, res.Status, res.Replayed)
//
// For a fan-out, Prepare readies each copy (its own connection, its bytes encoded) so that
// Fire sends them as close together as the machine allows.
package endpoint
