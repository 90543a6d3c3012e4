package schema

import (
	_ "embed"
	"encoding/json"
)

//go:generate go run ./internal/gen

// schemaDefs is schema.json, generated from the sections by go generate.
//
//go:embed schema.json
var schemaDefs []byte

// JSON returns the JSON Schema (draft 2020-12) of a scenario file, or with config set of an
// idemtest.yaml, for editors: the root section's keys at the top, every section under $defs.
// The loader is stricter (it compiles expressions, checks names and references); the schema is
// for completion and early hints.
func JSON(config bool) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(schemaDefs, &doc); err != nil {
		return nil, err
	}
	defs := doc["$defs"].(map[string]any)
	sec, title := Scenario, "idemtest scenario"
	if config {
		sec, title = Config, "idemtest config (idemtest.yaml)"
	}
	root := map[string]any{}
	for k, v := range defs[sec.def].(map[string]any) {
		root[k] = v
	}
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$defs"] = defs
	root["title"] = title
	return json.MarshalIndent(root, "", "  ")
}
