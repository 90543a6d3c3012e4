// Package schema is the one list of the keys each mapping of a scenario file or idemtest.yaml
// may have, by section, with their docs and JSON Schema constraints; package decode accepts
// exactly these keys (an unknown one gets "did you mean"), schema.json is generated from them
// (go generate ./internal/scenario/schema), and JSON returns the JSON Schema for editors.
//
//	m, ok := f.Mapping(n, "endpoint "+name, schema.Endpoint.Names()...)
//	b, _ := schema.JSON(false) // idemtest schema > idemtest.schema.json
package schema
