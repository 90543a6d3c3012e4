package yamlfile

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/redact"
)

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"A": "alpha", "EMPTY": "", "TOKEN": "tok_123456", "PORT": "8080"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		name, in, want, err string
	}{
		{name: "plain", in: "x${A}y", want: "xalphay"},
		{name: "default unused", in: "${A:-d}", want: "alpha"},
		{name: "default when unset", in: "${NOPE:-d}", want: "d"},
		{name: "default when empty", in: "${EMPTY:-d}", want: "d"},
		{name: "set but empty is empty", in: "<${EMPTY}>", want: "<>"},
		{name: "nested default", in: "${NOPE:-${A}}", want: "alpha"},
		{name: "nested twice", in: "${NOPE:-${NADA:-${A}-x}}!", want: "alpha-x!"},
		{name: "nested unset", in: "${NOPE:-${NADA}}", err: "1:12: environment variable NADA is not set"},
		{name: "unset", in: "a ${NOPE}", err: "1:6: environment variable NOPE is not set"},
		{name: "required empty", in: "${EMPTY:?give a token}", err: "environment variable EMPTY is set but empty: give a token"},
		{name: "required unset", in: "${NOPE:?}", err: "environment variable NOPE is not set"},
		{name: "not references", in: "${1} ${A-b} ${A", want: "${1} ${A-b} ${A"},
		{name: "number stays a number", in: "${PORT}", want: "8080"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &File{Path: "f.yaml", lines: []string{"k: " + tc.in}}
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte("k: "+tc.in), &doc); err != nil {
				t.Fatal(err)
			}
			f.expandEnv(doc.Content[0], lookup)
			got := doc.Content[0].Content[1].Value
			if tc.err != "" {
				if len(f.Errs) == 0 || !strings.Contains(f.Errs.Error(), tc.err) {
					t.Errorf("errors %v, want %q", f.Errs, tc.err)
				}
				return
			}
			if len(f.Errs) > 0 || got != tc.want {
				t.Errorf("%q expands to %q (errors %v), want %q", tc.in, got, f.Errs, tc.want)
			}
		})
	}
}

func TestSecretsRecorded(t *testing.T) {
	env := map[string]string{"TOKEN": "tok_123456", "PASS": "hunter22", "NAME": "visible_name", "DB": "postgres://app:dbpass99@db/x"}
	src := `
name: ${NAME}
endpoints:
  e:
    http:
      url: "http://u:${PASS}@127.0.0.1/{tool}?t=${TOKEN}"
      headers: {Authorization: "Bearer ${DEFAULTED:-devtoken}"}
probes:
  rows: {sql: {dsn: "${DB}", query: "select 1"}}
  lit: {http: {url: "http://admin:literalpw@127.0.0.1/"}}
services:
  s: {command: [x, "${NAME}"], env: {KEY: "${TOKEN}"}}
steps:
  - call_tool: t
    args: {who: "${NAME}"}
`
	f := &File{Path: "f.yaml"}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	f.expandEnv(doc.Content[0], func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	r := redact.New(&f.Secrets)
	for in, want := range map[string]string{
		"tok_123456":   "${TOKEN}",
		"hunter22":     "${PASS}",
		"dbpass99":     "***",
		"literalpw":    "***",
		"visible_name": "visible_name", // not in a URL, header, DSN or env
		"devtoken":     "devtoken",     // a default is written in the file: not a secret
	} {
		if got := r.String(in); got != want {
			t.Errorf("%s shows as %q, want %q", in, got, want)
		}
	}
}
