package synth

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestSchemaReaders: what a property schema says, as check and init both read it.
func TestSchemaReaders(t *testing.T) {
	tests := []struct {
		name, schema string
		typ          string
		given        string // JSON of the value given, "" for none
		required     []string
	}{
		{name: "a type", schema: `{"type":"integer"}`, typ: "integer"},
		{name: "a nullable type list", schema: `{"type":["null","string"]}`, typ: "string"},
		{name: "only null", schema: `{"type":["null"]}`, typ: ""},
		{name: "example first", schema: `{"examples":["ex"],"default":"d","const":"c","enum":["e"]}`, given: `"ex"`},
		{name: "default before const", schema: `{"default":"d","const":"c","enum":["e"]}`, given: `"d"`},
		{name: "const before enum", schema: `{"const":"c","enum":["e","c"]}`, given: `"c"`},
		{name: "a null default is given", schema: `{"default":null}`, given: `null`},
		{name: "empty examples give nothing", schema: `{"examples":[],"enum":[]}`},
		{name: "required in order, key left out", schema: `{"required":["b","idempotencyKey","a",3]}`, required: []string{"b", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p map[string]any
			if err := json.Unmarshal([]byte(tt.schema), &p); err != nil {
				t.Fatal(err)
			}
			if got := TypeOf(p); got != tt.typ {
				t.Errorf("TypeOf = %q, want %q", got, tt.typ)
			}
			got := ""
			if v, ok := Given(p); ok {
				b, _ := json.Marshal(v)
				got = string(b)
			}
			if got != tt.given {
				t.Errorf("Given = %s, want %s", got, tt.given)
			}
			if got := Required(p, "idempotencyKey"); !slices.Equal(got, tt.required) {
				t.Errorf("Required = %q, want %q", got, tt.required)
			}
		})
	}
}
