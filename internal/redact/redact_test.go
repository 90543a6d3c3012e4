package redact

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	htmltemplate "html/template"
	"net/url"
	"strings"
	"testing"
)

func TestRedactor(t *testing.T) {
	var s Secrets
	s.Add("tok_<&>+/=secret", "${TOKEN}")
	s.Add("abc", "${SHORT}") // too short to hide
	s.AddURL("postgres://app:p%40ss@db:5432/x and http://u:pw12345@h/")
	s.AddDSN(`host=db user=app password='it\'s a secret' sslmode=disable`)
	r := New(&s)
	tests := []struct{ name, in, want string }{
		{"raw", "Bearer tok_<&>+/=secret", "Bearer ${TOKEN}"},
		{"json", jsonString("tok_<&>+/=secret"), `"${TOKEN}"`},
		{"xml", xmlText("x tok_<&>+/=secret"), "x ${TOKEN}"},
		{"query", "?t=tok_%3C%26%3E%2B%2F%3Dsecret", "?t=${TOKEN}"},
		{"short values stay", "abc", "abc"},
		{"url password", "dial p%40ss and p@ss", "dial *** and ***"},
		{"any url password", "Get http://someone:hunter22@10.0.0.1/x", "Get http://someone:***@10.0.0.1/x"},
		{"dsn password", "open it's a secret", "open ***"},
		{"user kept", "http://u:pw12345@h/", "http://u:***@h/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	var nilR *Redactor
	if got := nilR.String("http://a:bcdef@h"); got != "http://a:***@h" {
		t.Errorf("nil redactor: %q", got)
	}
}

func TestWriter(t *testing.T) {
	var s Secrets
	s.Add("s3cr3t-value", "${K}")
	var b bytes.Buffer
	w := New(&s).Writer(&b)
	n, err := w.Write([]byte("a s3cr3t-value b\n"))
	if err != nil || n != len("a s3cr3t-value b\n") || b.String() != "a ${K} b\n" {
		t.Errorf("wrote %d %v %q", n, err, b.String())
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func xmlText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

func TestAddHeaderHidesEachCredential(t *testing.T) {
	var s Secrets
	s.AddHeader("Authorization", "Bearer tok-123456")
	s.AddHeader("Proxy-Authorization", "Basic dXNlcjpwYXNzLTk4NzY=") // user:pass-9876
	s.AddHeader("Cookie", "session=ck-abcdef; theme=dark-mode")
	s.AddHeader("Set-Cookie", `sid="sc-777777"; Path=/; HttpOnly`)
	r := New(&s)
	in := `{"auth":"Bearer tok-123456","token":"tok-123456","pw":"pass-9876","basic":"dXNlcjpwYXNzLTk4NzY=","c":"ck-abcdef dark-mode","sid":"sc-777777","path":"Path=/"}`
	got := r.String(in)
	for _, leaked := range []string{"tok-123456", "pass-9876", "dXNlcjpwYXNzLTk4NzY=", "ck-abcdef", "dark-mode", "sc-777777"} {
		if strings.Contains(got, leaked) {
			t.Errorf("%q left in %s", leaked, got)
		}
	}
	if !strings.Contains(got, "Path=/") {
		t.Errorf("a cookie attribute was hidden: %s", got)
	}
}

// TestEscapedForms: a secret holding a character some output escapes is hidden in each form an
// output writes it, one escaping inside another included, and in a decoded answer's strings
// and keys before any output escapes them.
func TestEscapedForms(t *testing.T) {
	secrets := []string{`p"qSECRETword`, `b\sSECRETword`, `ab+cdSECRET`, `lt<b>SECRET`, `a&b'cSECRET`, "nl\nSECRET\tx", "ünï\u202eSECRET€"}
	var s Secrets
	for _, v := range secrets {
		s.Add(v, "${TOKEN}")
	}
	r := New(&s)
	forms := map[string]func(string) string{
		"json":         func(v string) string { return jsonString(v) },
		"json no html": func(v string) string { return jsonInner(v, false) },
		"go %q":        func(v string) string { return fmt.Sprintf("%q", v) },
		"go %+q":       func(v string) string { return fmt.Sprintf("%+q", v) },
		"xml":          xmlText,
		"html":         html.EscapeString,
		"html/template": func(v string) string {
			var b strings.Builder
			_ = htmltemplate.Must(htmltemplate.New("").Parse(`<p title="{{.}}">{{.}}</p>`)).Execute(&b, v)
			return b.String()
		},
		"query":              url.QueryEscape,
		"markdown":           markdownEscape,
		"terminal":           terminalEscape,
		"json inside %q":     func(v string) string { return fmt.Sprintf("%q", jsonString(v)) },
		"%q inside xml":      func(v string) string { return xmlText(fmt.Sprintf("%q", v)) },
		"json inside html":   func(v string) string { return html.EscapeString(jsonString(v)) },
		"%q inside template": func(v string) string { return htmltemplate.HTMLEscapeString(fmt.Sprintf("%q", v)) },
	}
	for name, form := range forms {
		for _, v := range secrets {
			if got := r.String(form(v)); strings.Contains(got, "SECRET") {
				t.Errorf("%s of %q: %s", name, v, got)
			}
		}
	}
	answer := map[string]any{"a": []any{secrets[0], map[string]any{secrets[1]: secrets[6]}}, "n": 1.5}
	got, _ := json.Marshal(r.Value(answer))
	if strings.Contains(string(got), "SECRET") || !strings.Contains(string(got), `"n":1.5`) {
		t.Errorf("Value: %s", got)
	}
	if b, _ := json.Marshal(answer); !strings.Contains(string(b), "SECRET") {
		t.Errorf("Value changed its argument: %s", b)
	}
}

// TestOrdinaryValuesStay: nothing but a secret is rewritten.
func TestOrdinaryValuesStay(t *testing.T) {
	var s Secrets
	s.Add("tok_123456", "${TOKEN}")
	r := New(&s)
	for _, in := range []string{"issue_refund", "they differ at: refundId", `{"region":"refund"}`} {
		if got := r.String(in); got != in {
			t.Errorf("String(%q) = %q", in, got)
		}
	}
}
