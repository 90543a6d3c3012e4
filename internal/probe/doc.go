// Package probe evaluates a scenario's probes: read-only observations (an HTTP GET, an SQL
// query on PostgreSQL, a Redis command, a call_tool through an endpoint, a state file: JSON,
// JSON Lines or an SQLite database opened read-only) that assertions read
// fresh whenever they use them. It holds the connections probes reuse during a run, each made
// under the outbound policy of the scenario that asked, and checks the probes' targets against
// that policy before a trial's first call. It is the only package that talks to PostgreSQL,
// Redis and SQLite.
//
//	p := probe.New(callTool) // the runner answers call_tool probes through its endpoints
//	defer p.Close()
//	if pr, err := probe.Check(sc, env); err != nil { ... } // pr refused before any call
//	for _, name := range probe.Names(sc) {
//		v, err := p.Eval(ctx, sc, sc.Probes[name], env)
//		...
//	}
package probe
