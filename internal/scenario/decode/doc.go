// Package decode turns the YAML of a scenario file or an idemtest.yaml, read by yamlfile, into
// the typed model of package scenario: endpoints, services, sinks, probes, the check section and
// both step forms (the native call_tool/assert/sleep keys and the hosted-runner
// action/tool/check form decode into the same Step). Expressions and templates are compiled as
// they are decoded, against what they may name at that place.
//
// Each mapping is decoded against its section of package schema: exactly those keys, an unknown
// one reported with "did you mean". A new field is one line there (with its JSON Schema
// keywords), decoded in its section's file here; go generate ./internal/scenario/schema then
// rewrites schema.json.
//
//	f, root := yamlfile.Read("idemtest.yaml", os.LookupEnv)
//	cfg := decode.Config(ctx, f, root)
//	f, root = yamlfile.Read("refund.yaml", os.LookupEnv)
//	s := decode.Scenario(ctx, f, root, cfg, nil) // the scenario's sections override the config's
//
// Checks that need the whole scenario (step ids, references, hosts) are package load's.
package decode
