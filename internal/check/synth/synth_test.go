package synth

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSynthesize(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		want    string // JSON of the arguments
		wantErr string
	}{
		{name: "examples default enum const",
			schema: `{"required":["a","b","c","d","e"],"properties":{"a":{"type":"string","examples":["acct_1"]},"b":{"type":"number","default":3},"c":{"type":"string","enum":["x","y"]},"d":{"const":7},"e":{"type":"string","examples":["USD"],"maxLength":3}}}`,
			want:   `{"a":"acct_1_{{ session }}","b":3,"c":"x","d":7,"e":"USD"}`},
		{name: "formats",
			schema: `{"required":["m","u","t","w"],"properties":{"m":{"type":"string","format":"email"},"u":{"type":"string","format":"uuid"},"t":{"type":"string","format":"date-time"},"w":{"type":"string","format":"uri"}}}`,
			want:   `{"m":"idemtest+{{ session }}@example.com","t":"2030-01-01T00:00:00Z","u":"00000000-0000-4000-8000-{{ session }}","w":"http://127.0.0.1:9/idemtest/{{ session }}"}`},
		{name: "only required, key argument left out",
			schema: `{"required":["name","idempotencyKey"],"properties":{"name":{"type":"string"},"idempotencyKey":{"type":"string"},"note":{"type":"string"}}}`,
			want:   `{"name":"name_{{ session }}"}`},
		{name: "numbers within bounds",
			schema: `{"required":["i","n","x"],"properties":{"i":{"type":"integer","minimum":5},"n":{"type":"number","exclusiveMinimum":0},"x":{"type":"integer","minimum":0,"maximum":0}}}`,
			want:   `{"i":6,"n":1,"x":0}`},
		{name: "arrays and nested objects",
			schema: `{"required":["tags","addr"],"properties":{"tags":{"type":"array","items":{"type":"string"}},"addr":{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"zip":{"type":"string"}}}}}`,
			want:   `{"addr":{"city":"city_{{ session }}"},"tags":["tags_{{ session }}"]}`},
		{name: "nullable type list and anyOf",
			schema: `{"required":["a","b"],"properties":{"a":{"type":["null","boolean"]},"b":{"anyOf":[{"type":"null"},{"type":"integer"}]}}}`,
			want:   `{"a":true,"b":1}`},
		{name: "pattern cannot be built",
			schema:  `{"required":["sku"],"properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-\\d+$"}}}`,
			wantErr: "argument sku: a string matching"},
		{name: "no type",
			schema:  `{"required":["blob"],"properties":{"blob":{}}}`,
			wantErr: "argument blob: its schema gives no type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var schema map[string]any
			if err := json.Unmarshal([]byte(tt.schema), &schema); err != nil {
				t.Fatal(err)
			}
			got, err := Synthesize(schema, "idempotencyKey", "http://127.0.0.1:9")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}

func TestVary(t *testing.T) {
	got, field, ok := Vary(map[string]any{"accountId": "a", "amount": 2.5})
	if !ok || field != "amount" || got["amount"] != 3.5 || got["accountId"] != "a" {
		t.Errorf("vary = %v %q %v", got, field, ok)
	}
	if _, _, ok := Vary(map[string]any{}); ok {
		t.Error("vary of no arguments succeeded")
	}
}
