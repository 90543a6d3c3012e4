// Package netguard is idemtest's one outbound policy. idemtest deliberately sends duplicate
// mutating calls, so every client it owns (HTTP and MCP endpoints, probes, tools and init)
// connects only to loopback addresses and to the hosts the user allowed, and never follows a
// redirect. The policy is checked at every connection, on the host name and on the address
// actually dialled, so a redirect, a templated host or a name that resolves somewhere else
// never carries a request (or its Authorization header) to a refused host.
//
//	p := netguard.New([]string{"payments.internal"})
//	client := p.Client(10 * time.Second) // refuses other hosts; a redirect is a *RedirectError
//	conn, err := p.DialContext(ctx, "tcp", "127.0.0.1:5432")
//
// It imports nothing of idemtest's: endpoint, runner and scenario share it.
package netguard
