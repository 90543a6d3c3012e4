package scaffold

import (
	"encoding/json"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

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
		"a": `"ex"`, "b": `3`, "c": `"x"`, "d": `6 TODO`, "e": `true TODO`, "f": `["TODO"] TODO`,
		"g": `{"inner":"in"} TODO`, "h": `"TODO" TODO`,
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
