// Package endpoint talks to tool servers and classifies every call's outcome in Jepsen's sense:
// ok (it definitely happened), fail (it definitely did not) or info (indeterminate). It holds
// the Endpoint interface, its JSON-over-HTTP implementation and the synchronized release of a
// fan-out; MCP (over stdio or streamable HTTP) is package endpoint/mcp.
//
//	ep, err := endpoint.NewHTTP(endpoint.HTTPConfig{URL: "http://127.0.0.1:8080/tools/{tool}", KeyHeader: "Idempotency-Key"})
//	res := ep.Call(ctx, endpoint.Request{Tool: "issue_refund", Args: args, Key: "s1-0"})
//	fmt.Println(res.Outcome, res.Status, res.Replayed)
//
// Fanout sends copies of one call as close together as the machine allows: each copy is
// prepared first (its own connection, its request written but for the held-back bytes), then
// all are released, and the result says how far apart they left and whether they overlapped.
//
//	fo := endpoint.Fanout(ctx, ep, req, endpoint.FanoutOptions{Copies: 16, Sync: dispatch.SyncLastByte})
//
// An endpoint served by several instances (DESIGN §11) is an InstanceSet: its caller picks the
// instance of each call, and of each fan-out copy with FanoutOptions.Targets.
//
//	set := endpoint.NewReplicas([]endpoint.Endpoint{a, b}, []endpoint.Instance{{Index: 1, URL: ua}, {Index: 2, URL: ub}})
//	res := set.Member(1).Call(ctx, req) // the retry, on instance 2
package endpoint
