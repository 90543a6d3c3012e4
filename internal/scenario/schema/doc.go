// Package schema is the one list of the keys each mapping of a scenario file or idemtest.yaml
// may have, by section, with their docs; package decode accepts exactly these keys (an unknown
// one gets "did you mean"), and JSON returns the JSON Schema built from schema.json for editors,
// with those docs written in. A test keeps schema.json and the sections in step: the same
// properties, required keys and kinds everywhere.
//
//	m, ok := f.Mapping(n, "endpoint "+name, schema.Endpoint.Names()...)
//	b, _ := schema.JSON(false) // idemtest schema > idemtest.schema.json
package schema
