package schema

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"

	"github.com/idemtest/idemtest/internal/scenario"
)

func resolved(t *testing.T, config bool) *jsonschema.Resolved {
	t.Helper()
	b, err := JSON(config)
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
	files, _ := filepath.Glob("../../../examples/scenarios/*.yaml")
	more, _ := filepath.Glob("../../../examples/scenarios/*/*.yaml")
	broken, _ := filepath.Glob("../../../examples/broken/*.yaml")
	good, _ := filepath.Glob("../load/testdata/good/*.yaml")
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
			if base := filepath.Base(path); base == scenario.ConfigName || filepath.Base(filepath.Dir(path)) == "broken" {
				s = configSchema
			}
			if err := s.Validate(doc); err != nil {
				t.Errorf("schema rejects %s: %v", path, err)
			}
		})
	}
}

// TestSchemaKnowsEveryField keeps schema.json in step with the loader's field tables: for every
// section, the same properties, the same required ones, and values of the same kind.
func TestSchemaKnowsEveryField(t *testing.T) {
	roots := map[bool]map[string]any{}
	for _, config := range []bool{false, true} {
		b, err := JSON(config)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		json.Unmarshal(b, &doc)
		roots[config] = doc
	}
	defs := roots[false]["$defs"].(map[string]any)
	for name, sec := range sections {
		t.Run(name, func(t *testing.T) {
			node := schemaNode(defs, sec.schema)
			switch {
			case name == "config":
				node = roots[true]
			case name == "scenario":
				node = roots[false]
			case node == nil:
				t.Fatalf("schema.json has no $defs/%s", sec.schema)
			}
			props, _ := node["properties"].(map[string]any)
			required := map[string]bool{}
			if r, ok := node["required"].([]any); ok {
				for _, x := range r {
					required[x.(string)] = true
				}
			}
			for _, fd := range sec.fields {
				p, ok := props[fd.name].(map[string]any)
				if !ok {
					t.Errorf("field %q is missing from schema.json", fd.name)
					continue
				}
				if k := schemaKind(p); k != fd.kind {
					t.Errorf("field %q is a %s in the loader, a %s in schema.json", fd.name, fd.kind, k)
				}
				if required[fd.name] != fd.required {
					t.Errorf("field %q: required is %v in the loader, %v in schema.json", fd.name, fd.required, required[fd.name])
				}
				if fd.doc != "" && p["description"] != fd.doc {
					t.Errorf("field %q: description %q, want the loader's %q", fd.name, p["description"], fd.doc)
				}
			}
			if len(props) != len(sec.fields) {
				t.Errorf("schema.json has %d fields, the loader %d", len(props), len(sec.fields))
			}
		})
	}
}

// schemaKind tells the kind of value a property schema describes.
func schemaKind(p map[string]any) kind {
	switch ref, _ := p["$ref"].(string); ref {
	case "#/$defs/duration":
		return kDuration
	case "#/$defs/template":
		return kTemplate
	case "#/$defs/stringMap":
		return kStringMap
	case "":
	default:
		return kMapping
	}
	if _, ok := p["enum"]; ok {
		return kString
	}
	switch p["type"] {
	case "string":
		return kString
	case "integer":
		return kInteger
	case "boolean":
		return kBoolean
	case "array":
		return kList
	case "object":
		return kMapping
	case nil:
		return kAny
	}
	return kind(fmt.Sprint(p["type"]))
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

func TestSchemaFileProbes(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		ok         bool
	}{
		{"json", `{"path": "s.json"}`, true},
		{"sqlite with a query and args", `{"path": "s.db", "format": "sqlite", "query": "select 1", "args": ["a"]}`, true},
		{"sqlite without a query", `{"path": "s.db", "format": "sqlite"}`, false},
		{"a query without sqlite", `{"path": "s.json", "query": "select 1"}`, false},
		{"args without sqlite", `{"path": "s.jsonl", "format": "jsonl", "args": ["a"]}`, false},
		{"unknown format", `{"path": "s.csv", "format": "csv"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc any
			if err := json.Unmarshal([]byte(`{"name": "x", "probes": {"p": {"file": `+tc.file+`}}, "steps": [{"assert": "true"}]}`), &doc); err != nil {
				t.Fatal(err)
			}
			if err := resolved(t, false).Validate(doc); (err == nil) != tc.ok {
				t.Errorf("valid = %v, want %v (%v)", err == nil, tc.ok, err)
			}
		})
	}
}
