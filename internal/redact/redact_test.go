package redact

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
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
