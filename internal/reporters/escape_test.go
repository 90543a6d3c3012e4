package reporters

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
)

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

func TestEscapeJSON(t *testing.T) {
	in := []byte("{\"name\": \"a\u007f\u009b\u202eb\"}")
	got := EscapeJSON(in)
	var v map[string]string
	if err := json.Unmarshal(got, &v); err != nil || v["name"] != "a\u007f\u009b\u202eb" {
		t.Errorf("EscapeJSON(%q) = %q, decodes to %q (%v)", in, got, v["name"], err)
	}
	if strings.ContainsAny(string(got), "\u007f\u009b\u202e") {
		t.Errorf("EscapeJSON left a raw character: %q", got)
	}
}

// TestReportsEscapeServerText feeds every reporter a report whose server-controlled strings
// (keys built from results, tool names, errors, service output) carry terminal escapes, bidi
// overrides and a forged workflow command: none reaches the output raw.
func TestReportsEscapeServerText(t *testing.T) {
	hostile := "re\x1b]0;pwned\x07\u202eevil\n::error file=x.yaml,line=1::forged"
	rep := sampleReport()
	for _, r := range rep.Scenarios {
		for _, tr := range []*runner.Trial{r.FailedTrial, r.Trial1} {
			if tr == nil {
				continue
			}
			for i := range tr.Calls {
				tr.Calls[i].Key, tr.Calls[i].Tool, tr.Calls[i].Error = hostile, hostile, hostile
			}
		}
		if r.Failure != nil {
			r.Failure.Message = hostile
			r.Failure.Explanation = append(r.Failure.Explanation, hostile)
			r.Failure.ServiceOutput = map[string]string{"svc": hostile}
		}
	}
	var term, gh, verbose bytes.Buffer
	Terminal(&term, rep, TerminalOptions{Verbose: true})
	GitHub(&gh, rep, "")
	p := NewProgress(&verbose, 1, false, true, false)
	for _, c := range rep.Scenarios[1].FailedTrial.Calls {
		p.Event(runner.Event{Kind: "call", Scenario: &scenario.Scenario{Name: hostile}, Trial: 1, Call: &c})
	}
	for name, out := range map[string]string{"terminal": term.String(), "github": gh.String(), "verbose": verbose.String()} {
		if strings.ContainsAny(out, "\x1b\x07\u202e") {
			t.Errorf("%s output holds a raw control or bidi character:\n%q", name, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "::") && !strings.HasPrefix(l, "::error file=scenarios/") && !strings.HasPrefix(l, "::warning file=scenarios/") {
				t.Errorf("%s output has a forged workflow command line: %q", name, l)
			}
		}
	}
}
