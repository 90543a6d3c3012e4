package safejson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// hostileIn reports the first hostile character left raw in b, -1 for none.
func hostileIn(b []byte) rune {
	for _, r := range string(b) {
		if Hostile(r) && r != '\n' {
			return r
		}
	}
	return -1
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // the value decoded back, when it differs from in
	}{
		{name: "plain", in: "re_123 ok"},
		{name: "esc", in: "a\x1b[31mred"},
		{name: "c1 csi", in: "a\u009b31m"},
		{name: "del", in: "a\x7fb"},
		{name: "rtl override", in: "refund\u202edcba"},
		{name: "bidi isolates and marks", in: "\u2066x\u2069\u200f\u061c"},
		{name: "line separators", in: "a\u2028b\u2029"},
		{name: "newline and tab", in: "a\nb\tc"},
		{name: "quotes and backslashes", in: `say "\u202e" \`},
		{name: "non-ascii kept", in: "café ✓ 日本"},
		{name: "invalid utf-8", in: "a\xffb", want: "a\uFFFDb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = tc.in
			}
			raw, _ := json.Marshal(map[string]string{"k": tc.in}) // DEL, C1 and bidi stay raw in it
			if tc.want != "" {
				raw = []byte(`{"k":"` + tc.in + `"}`) // invalid UTF-8 passes RawMessage unchanged
			}
			v := map[string]any{"name": tc.in, tc.in: []string{tc.in}, "raw": json.RawMessage(raw)}
			for _, indent := range []string{"", "  "} {
				var buf bytes.Buffer
				if err := Encode(&buf, v, indent); err != nil {
					t.Fatal(err)
				}
				got := buf.Bytes()
				var back map[string]any
				if err := json.Unmarshal(got, &back); err != nil {
					t.Fatalf("indent %q: not JSON: %v\n%s", indent, err, got)
				}
				if back["name"] != want {
					t.Errorf("indent %q: name decodes to %q, want %q", indent, back["name"], want)
				}
				if k := back["raw"].(map[string]any)["k"]; k != want {
					t.Errorf("indent %q: raw decodes to %q, want %q", indent, k, want)
				}
				if _, ok := back[want]; !ok {
					t.Errorf("indent %q: key %q lost: %v", indent, want, back)
				}
				if r := hostileIn(got); r >= 0 {
					t.Errorf("indent %q: raw %U left in %q", indent, r, got)
				}
				if indent != "" && !bytes.HasPrefix(got, []byte("{\n  \"")) {
					t.Errorf("the indentation was rewritten: %q", got)
				}
			}
		})
	}
}

// TestMarshalLeavesCleanJSONAlone: a document with nothing to escape is json.Marshal's, byte for
// byte.
func TestMarshalLeavesCleanJSONAlone(t *testing.T) {
	v := map[string]any{"a": []any{1, "x\ny", "✓"}, "b": map[string]any{"c": nil}}
	want, _ := json.Marshal(v)
	got, err := Marshal(v)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("Marshal = %s, %v; want %s", got, err, want)
	}
}

func FuzzMarshal(f *testing.F) {
	for _, s := range []string{"", "a\x1b[2J", "\u202e", "x\xff\xfe", `"\`, "\u0085\u2028", "日本\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := Marshal(map[string]any{s: s, "raw": json.RawMessage(`"x"`)})
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(b) {
			t.Fatalf("not JSON: %q", b)
		}
		if r := hostileIn(b); r >= 0 {
			t.Fatalf("raw %U left in %q", r, b)
		}
		var back map[string]string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		want := strings.Map(func(r rune) rune { return r }, s) // each byte that is not UTF-8 → U+FFFD
		if back[want] != want {
			t.Fatalf("decodes to %q, want %q", back, want)
		}
	})
}
