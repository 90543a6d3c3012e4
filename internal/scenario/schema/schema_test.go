package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v4"

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

// TestSchemaJSONIsGenerated keeps the committed schema.json what the sections generate, so a
// field added to fields.go reaches editors.
func TestSchemaJSONIsGenerated(t *testing.T) {
	want, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("schema.json is not what fields.go generates: run go generate ./internal/scenario/schema")
	}
}

// TestSectionsAreDocumented: every section says what its mapping is, under a $defs name of its
// own, and its keys are unique, so hovering any mapping in an editor explains it.
func TestSectionsAreDocumented(t *testing.T) {
	defs := map[string]string{}
	for name, sec := range sections {
		t.Run(name, func(t *testing.T) {
			if strings.TrimSpace(sec.doc) == "" {
				t.Error("the section has no doc")
			}
			if other, dup := defs[sec.def]; dup || sec.def == "" {
				t.Errorf("$defs/%q is also section %q", sec.def, other)
			}
			if _, dup := shapes[sec.def]; dup {
				t.Errorf("$defs/%q is also a shape", sec.def)
			}
			defs[sec.def] = name
			seen := map[string]bool{}
			for _, f := range sec.fields {
				if seen[f.name] {
					t.Errorf("key %q is listed twice", f.name)
				}
				seen[f.name] = true
			}
		})
	}
}

func TestSchemaRejects(t *testing.T) {
	for _, tc := range []struct{ name, step string }{
		{"misspelt field", `{"call_tool": "t", "fanuot": 3}`},
		{"sync without fanout", `{"call_tool": "t", "sync": "barrier"}`},
		{"stagger with one copy", `{"call_tool": "t", "fanout": 1, "stagger": "2ms"}`},
		{"retry with fanout", `{"call_tool": "t", "fanout": 4, "retry": {"attempts": 2}}`},
		{"neither tool nor earlier call", `{"fanout": 2}`},
		{"unknown sync", `{"call_tool": "t", "fanout": 2, "sync": "together"}`},
		{"retry attempts out of range", `{"call_tool": "t", "retry": {"attempts": 101}}`},
		{"bad duration", `{"call_tool": "t", "timeout": "5 seconds"}`},
		{"seed step without action", `{"tool": "t"}`},
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
