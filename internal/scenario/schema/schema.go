package schema

import (
	_ "embed"
	"encoding/json"

	"github.com/idemtest/idemtest/internal/scenario"
)

//go:embed schema.json
var schemaDefs []byte

// JSON returns the JSON Schema (draft 2020-12) of a scenario file, or with config set of an
// idemtest.yaml, for editors. The loader is stricter (it compiles expressions, checks names and
// references); the schema is for completion and early hints.
func JSON(config bool) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(schemaDefs, &doc); err != nil {
		return nil, err
	}
	defs := doc["$defs"].(map[string]any)
	shared := defs["shared"].(map[string]any)["properties"].(map[string]any)
	props := map[string]any{}
	for k, v := range shared {
		props[k] = v
	}
	root := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"$defs":                defs,
		"type":                 "object",
		"additionalProperties": false,
		"properties":           props,
	}
	fields := Scenario
	if config {
		fields = Config
		root["title"] = "idemtest config (idemtest.yaml)"
		props["check"] = map[string]any{"$ref": "#/$defs/check"}
		props["coverage"] = map[string]any{"$ref": "#/$defs/coverage"}
	} else {
		root["title"] = "idemtest scenario"
		root["required"] = []string{"name", "steps"}
		props["name"] = map[string]any{"type": "string"}
		props["description"] = map[string]any{"type": "string"}
		props["tags"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
		props["trials"] = map[string]any{"type": "integer", "minimum": 1, "maximum": scenario.MaxTrials}
		props["steps"] = map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"$ref": "#/$defs/step"}}
	}
	describe(root, fields)
	return json.MarshalIndent(root, "", "  ")
}
