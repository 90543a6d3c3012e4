// Package endpointtest holds what the tests of package endpoint and of its MCP implementation
// share: a listener the outbound policy must never reach, a poll for a condition a server
// reaches in its own time, and an MCP server whose tools/list pages are written by the test.
//
//	refused := endpointtest.NewRefusedListener(t)
//	ep, _ := endpoint.NewHTTP(endpoint.HTTPConfig{URL: refused.URL + "/{tool}"})
//	ep.Call(ctx, endpoint.Request{Tool: "t"}) // fails: 0.0.0.0 is not loopback
//	refused.Check(t)                          // nothing arrived
package endpointtest
