package reporters

import "testing"

func TestEscape(t *testing.T) {
	tests := []struct{ name, in, line, text string }{
		{"plain", "re_123 ok", "re_123 ok", "re_123 ok"},
		{"esc and bel", "a\x1b[31mred\x07", `a\x1b[31mred\x07`, `a\x1b[31mred\x07`},
		{"c1 csi", "a\u009b31m", `a\x9b31m`, `a\x9b31m`},
		{"del and nul", "a\x7f\x00", `a\x7f\x00`, `a\x7f\x00`},
		{"rtl override", "refund\u202edcba", `refund\u202edcba`, `refund\u202edcba`},
		{"bidi isolate and marks", "\u2066x\u2069\u200f", `\u2066x\u2069\u200f`, `\u2066x\u2069\u200f`},
		{"line separator", "a\u2028b", `a\u2028b`, `a\u2028b`},
		{"invalid utf-8", "a\xffb", "a\uFFFDb", "a\uFFFDb"},
		{"newline and tab", "a\tb\nc", `a\x09b\x0ac`, "a\tb\nc"},
		{"carriage return", "ok\rFAKE", `ok\x0dFAKE`, `ok\x0dFAKE`},
		{"forged workflow command", "x\n::error file=a.yaml,line=1::forged", `x\x0a::error file=a.yaml,line=1::forged`, "x\n\\x3a:error file=a.yaml,line=1::forged"},
		{"indented command", "  ::add-mask::x", `  \x3a:add-mask::x`, `  \x3a:add-mask::x`},
		{"v1 command", "a ##[error]b", `a #\x23[error]b`, `a #\x23[error]b`},
		{"colons inside a line stay", "host [::1]:80 a::b", "host [::1]:80 a::b", "host [::1]:80 a::b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Escape(tc.in); got != tc.line {
				t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.line)
			}
			if got := EscapeText(tc.in); got != tc.text {
				t.Errorf("EscapeText(%q) = %q, want %q", tc.in, got, tc.text)
			}
		})
	}
}
