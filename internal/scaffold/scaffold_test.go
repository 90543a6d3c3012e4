package scaffold

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/endpoint"
)

func schema(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestExampleArgs(t *testing.T) {
	s := schema(t, `{"type":"object","required":["a","b","c","d","e","f","g","h"],"properties":{
		"a":{"type":"string","examples":["ex"]},
		"b":{"type":"number","default":3},
		"c":{"type":"string","enum":["x","y"]},
		"d":{"type":"integer","minimum":5},
		"e":{"type":"boolean"},
		"f":{"type":"array","items":{"type":"string"}},
		"g":{"type":"object","properties":{"inner":{"type":"string","examples":["in"]}}},
		"h":{"type":"string"},
		"optional":{"type":"string"},
		"idempotencyKey":{"type":"string"}}}`)
	got := map[string]string{}
	for _, a := range exampleArgs(s, "idempotencyKey") {
		b, _ := json.Marshal(a.value)
		got[a.name] = string(b)
		if a.todo {
			got[a.name] += " TODO"
		}
	}
	want := map[string]string{
		"a": `"ex"`, "b": `3`, "c": `"x"`, "d": `6`, "e": `true`, "f": `["TODO(string)"] TODO`,
		"g": `{"inner":"in"}`, "h": `"TODO(string)" TODO`,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %s, want %s", k, got[k], v)
		}
	}
	if _, ok := got["optional"]; ok {
		t.Error("an optional property was generated although some are required")
	}
	if _, ok := got["idempotencyKey"]; ok {
		t.Error("the key argument was generated")
	}
}

func TestScenarioIsValidYAML(t *testing.T) {
	for _, idem := range []bool{false, true} {
		tool := endpoint.Tool{Name: "create_things", Idempotent: idem, InputSchema: schema(t,
			`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"}},"n":{"type":"integer"}}}`)}
		src := Scenario(tool, Options{Endpoint: "e", Fanout: 4})
		var doc map[string]any
		if err := yaml.Unmarshal(src, &doc); err != nil {
			t.Fatalf("generated YAML does not parse: %v\n%s", err, src)
		}
		text := string(src)
		if !strings.Contains(text, "fanout: 4") || !strings.Contains(text, "# TODO") {
			t.Errorf("generated scenario:\n%s", text)
		}
		if strings.Contains(text, "retry.replayed") == idem {
			t.Errorf("idempotentHint=%v: replay assertion present=%v\n%s", idem, !idem, text)
		}
	}
}

// TestKeyReuseChangesThePayload: the key-reuse step sends another valid payload whatever the
// first argument is, so that a server comparing payloads must refuse it.
func TestKeyReuseChangesThePayload(t *testing.T) {
	tests := []struct {
		name, schema string
	}{
		{"string", `{"type":"string","examples":["acct_1"]}`},
		{"number", `{"type":"number","examples":[49.99]}`},
		{"integer", `{"type":"integer"}`},
		{"boolean", `{"type":"boolean"}`},
		{"enum", `{"type":"string","enum":["active","closed"]}`},
		{"array", `{"type":"array","items":{"type":"string","examples":["a"]}}`},
		{"empty array", `{"type":"array"}`},
		{"object", `{"type":"object","properties":{"id":{"type":"string","examples":["x"]}}}`},
		{"empty object", `{"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := schema(t, `{"type":"object","required":["a","b"],"properties":{"a":`+tt.schema+`,"b":{"type":"number","examples":[1]}}}`)
			var doc struct {
				Steps []struct {
					ID   string         `yaml:"id"`
					Args map[string]any `yaml:"args"`
				} `yaml:"steps"`
			}
			src := Scenario(endpoint.Tool{Name: "t", InputSchema: s}, Options{Endpoint: "e"})
			if err := yaml.Unmarshal(src, &doc); err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			args := map[string]map[string]any{}
			for _, st := range doc.Steps {
				if st.ID != "" {
					args[st.ID] = st.Args
				}
			}
			first, reuse := args["first"], args["reuse"]
			if first == nil || reuse == nil {
				t.Fatalf("no first or reuse step:\n%s", src)
			}
			if reflect.DeepEqual(first["a"], reuse["a"]) || !reflect.DeepEqual(first["b"], reuse["b"]) {
				t.Errorf("first a=%v b=%v, reuse a=%v b=%v: want only a changed\n%s", first["a"], first["b"], reuse["a"], reuse["b"], src)
			}
			if tt.name == "enum" && reuse["a"] != "closed" {
				t.Errorf("enum: reuse a=%v, want the other member", reuse["a"])
			}
		})
	}
}

// TestSessionScopedStrings: free-form strings get the session so that reruns never collide;
// constrained strings stay valid.
func TestSessionScopedStrings(t *testing.T) {
	s := schema(t, `{"type":"object","properties":{
		"account":{"type":"string","examples":["acct_1"]},
		"status":{"type":"string","enum":["active"]},
		"email":{"type":"string","format":"email","examples":["a@example.com"]},
		"code":{"type":"string","maxLength":3,"examples":["EUR"]},
		"count":{"type":"integer","examples":[2]}}}`)
	src := string(Scenario(endpoint.Tool{Name: "t", InputSchema: s}, Options{Endpoint: "e"}))
	for _, want := range []string{
		`account: "acct_1_{{ session }}"`, `status: "active"`, `email: "a@example.com"`, `code: "EUR"`, `count: 2`, "trials: 10",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("missing %s in\n%s", want, src)
		}
	}
	if strings.Contains(src, "burst.conflict") {
		t.Errorf("a burst count assertion, which holds when every copy executes:\n%s", src)
	}
}

func TestToolNamesAreQuoted(t *testing.T) {
	name := "refund: now #1\n- x"
	src := Scenario(endpoint.Tool{Name: name}, Options{Endpoint: "a b"})
	var doc struct {
		Name     string `yaml:"name"`
		Endpoint string `yaml:"endpoint"`
		Steps    []struct {
			Tool string `yaml:"call_tool"`
		} `yaml:"steps"`
	}
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	if doc.Steps[0].Tool != name || doc.Endpoint != "a b" || doc.Name != name+" is retry-safe" {
		t.Errorf("decoded %+v\n%s", doc, src)
	}
	if !strings.Contains(string(src), "# TODO") {
		t.Errorf("a tool without a schema gets no TODO arguments:\n%s", src)
	}
}

// TestSchemaReadAsCheckReadsIt: init reads a property schema as check's synth does (one home,
// synth.Given and synth.TypeOf), so the scenario init writes and the arguments check builds
// agree on a nullable type list and a const beside an enum.
func TestSchemaReadAsCheckReadsIt(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"nullable type list", `{"type":["null","integer"]}`, `1`},
		{"const before enum", `{"enum":["a","b"],"const":"b"}`, `"b"`},
		{"example before default", `{"examples":["ex"],"default":"d"}`, `"ex"`},
		{"no type", `{}`, `"TODO(value)" TODO`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, todo := example(schema(t, tt.schema))
			b, _ := json.Marshal(v)
			got := string(b)
			if todo {
				got += " TODO"
			}
			if got != tt.want {
				t.Errorf("example(%s) = %s, want %s", tt.schema, got, tt.want)
			}
		})
	}
	// A schema that requires only the key argument asks for no other argument.
	s := schema(t, `{"required":["idempotencyKey"],"properties":{"idempotencyKey":{"type":"string"},"note":{"type":"string"}}}`)
	if got := exampleArgs(s, "idempotencyKey"); len(got) != 0 {
		t.Errorf("exampleArgs = %v, want none", got)
	}
}
