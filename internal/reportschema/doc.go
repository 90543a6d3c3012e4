// Package reportschema ships the JSON Schema (draft 2020-12) of every machine-readable output of
// idemtest: the reports of run, check, sweep, proxy and tools (--json), and one line of a trace
// (run --trace, proxy --record). idemtest schema --report KIND prints them; the tests validate
// every JSON the suite produces against them (package schemacheck), so that a field added,
// renamed or retyped in a writer fails until its schema says so.
//
//	b, err := reportschema.Schema("run")
package reportschema
