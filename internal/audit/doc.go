// Package audit judges tool calls recorded in production (DESIGN §14): it reads OpenTelemetry
// traces (OTLP JSON as the Collector's file exporter writes it) and idemtest's own traces, maps
// each span to a tool call by the GenAI, MCP and HTTP semantic conventions, and reports per tool
// the double executions under one key (§8 on production data), retries under a fresh key
// (§10's rule, agentverdict.Signature), mutating calls without a key, keys shared by two
// sessions or two argument sets, key expiry collisions, and the idempotency hit and conflict
// rates with their thresholds.
//
// It streams: Auditor.Add takes one call at a time, and what it remembers is bounded by the keys
// seen inside the window (Options.Window), not by the input.
//
//	a := audit.New(audit.Options{TTL: 24 * time.Hour, MaxHitRate: 0.05})
//	err := audit.ReadFile(ctx, "traces.jsonl", audit.Mapping{}, a.Add)
//	rep := a.Report()
package audit
