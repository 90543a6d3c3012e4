package scenario

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
)

func resolved(t *testing.T, config bool) *jsonschema.Resolved {
	t.Helper()
	b, err := Schema(config)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSchemaAcceptsTheExamples validates every example file against the schema it should match.
func TestSchemaAcceptsTheExamples(t *testing.T) {
	scenarioSchema, configSchema := resolved(t, false), resolved(t, true)
	files, _ := filepath.Glob("../../examples/scenarios/*.yaml")
	more, _ := filepath.Glob("../../examples/scenarios/*/*.yaml")
	broken, _ := filepath.Glob("../../examples/broken/*.yaml")
	good, _ := filepath.Glob("testdata/good/*.yaml")
	for _, path := range append(append(append(files, more...), broken...), good...) {
		t.Run(path, func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := yaml.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			// Through JSON, as an editor sees the document.
			j, _ := json.Marshal(v)
			var doc any
			json.Unmarshal(j, &doc)
			s := scenarioSchema
			if base := filepath.Base(path); base == ConfigName || filepath.Base(filepath.Dir(path)) == "broken" {
				s = configSchema
			}
			if err := s.Validate(doc); err != nil {
				t.Errorf("schema rejects %s: %v", path, err)
			}
		})
	}
}

// TestSchemaKnowsEveryCallField keeps the schema in step with the loader.
func TestSchemaKnowsEveryCallField(t *testing.T) {
	var doc map[string]any
	json.Unmarshal(schemaDefs, &doc)
	props := doc["$defs"].(map[string]any)["callStep"].(map[string]any)["properties"].(map[string]any)
	for _, f := range callFields {
		if _, ok := props[f]; !ok {
			t.Errorf("call step field %q is missing from schema.json", f)
		}
	}
	if len(props) != len(callFields) {
		t.Errorf("schema.json has %d call step fields, the loader %d", len(props), len(callFields))
	}
}

// TestSchemaKnowsEveryCheckField keeps the check: section of the schema in step with the loader.
func TestSchemaKnowsEveryCheckField(t *testing.T) {
	var doc map[string]any
	json.Unmarshal(schemaDefs, &doc)
	check := doc["$defs"].(map[string]any)["check"].(map[string]any)
	props := func(m map[string]any) map[string]any { return m["properties"].(map[string]any) }
	tools := props(check)["tools"].(map[string]any)["additionalProperties"].(map[string]any)
	snapshot := props(check)["snapshot"].(map[string]any)["items"].(map[string]any)
	for _, tt := range []struct {
		what   string
		schema map[string]any
		fields []string
	}{{"check", props(check), checkFields}, {"check.tools.NAME", props(tools), checkToolFields}, {"check.snapshot[]", props(snapshot), checkSnapshotFields}} {
		for _, f := range tt.fields {
			if _, ok := tt.schema[f]; !ok {
				t.Errorf("%s field %q is missing from schema.json", tt.what, f)
			}
		}
		if len(tt.schema) != len(tt.fields) {
			t.Errorf("schema.json has %d %s fields, the loader %d", len(tt.schema), tt.what, len(tt.fields))
		}
	}
}

func TestSchemaRejects(t *testing.T) {
	for _, tc := range []struct{ name, step string }{
		{"misspelt field", `{"call_tool": "t", "fanuot": 3}`},
		{"sync without fanout", `{"call_tool": "t", "sync": "barrier"}`},
		{"stagger with one copy", `{"call_tool": "t", "fanout": 1, "stagger": "2ms"}`},
		{"retry with fanout", `{"call_tool": "t", "fanout": 4, "retry": {"attempts": 2}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc any
			json.Unmarshal([]byte(`{"name": "x", "steps": [`+tc.step+`]}`), &doc)
			if err := resolved(t, false).Validate(doc); err == nil {
				t.Error("the schema accepts it")
			}
		})
	}
	var doc any
	json.Unmarshal([]byte(`{"name": "x", "steps": [{"call_tool": "t", "fanout": 4, "sync": "barrier", "stagger": "1ms"}, {"call_tool": "t", "retry": {}}]}`), &doc)
	if err := resolved(t, false).Validate(doc); err != nil {
		t.Errorf("the schema rejects a valid fan-out and retry: %v", err)
	}
}
