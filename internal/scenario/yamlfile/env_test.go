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
	env := map[string]string{
		"TOKEN": "tok_123456", "PASS": "hunter22", "NAME": "visible_name", "DB": "postgres://app:dbpass99@db/x",
		"REGION": "refund", "TARGET": "fiber", "STORE": "memory", "TOKEN_FILE": "/run/secrets/token",
		"STRIPE": "sk_live_4242", "STRIPE_KEY": "rk_live_9999", "TENANT": "tenant-abc",
	}
	src := `
name: ${NAME} in ${REGION}
secrets: [STRIPE, UNSET_ONE]
endpoints:
  e:
    http:
      url: "http://u:${PASS}@127.0.0.1/{tool}?t=${TOKEN}&r=${REGION}"
      headers: {Authorization: "Bearer ${DEFAULTED:-devtoken}", X-Tenant: "${TENANT}", Idempotency-Key: "fixed-key-1", X-Auth-Token: "literal-token-77"}
probes:
  rows: {sql: {dsn: "${DB}", query: "select 1"}}
  lit: {http: {url: "http://admin:literalpw@127.0.0.1/"}}
services:
  s: {command: [x, "${NAME}"], env: {KEY: "${TOKEN}", REGION: "${REGION}", STORE: "${STORE}", DB_PASSWORD: "literal-dbpw", TOKEN_FILE: "${TOKEN_FILE}"}}
steps:
  - call_tool: issue_${TARGET}
    args: {who: "${NAME}", key: "${STRIPE_KEY}"}
`
	f := &File{Path: "f.yaml", lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	f.expandEnv(doc.Content[0], f.lookupEnv)
	for i := 0; i+1 < len(doc.Content[0].Content); i += 2 {
		if doc.Content[0].Content[i].Value == "secrets" {
			f.AddSecretVars(doc.Content[0].Content[i+1])
		}
	}
	if len(f.Errs) > 0 {
		t.Fatal(f.Errs)
	}
	r := redact.New(&f.Secrets)
	for _, tc := range []struct{ in, want, why string }{
		{"tok_123456", "${TOKEN}", "its name says token"},
		{"hunter22", "${PASS}", "a URL password whose variable says pass"},
		{"dbpass99", "***", "a DSN password"},
		{"literalpw", "***", "a URL password written out"},
		{"devtoken", "***", "an Authorization header, whatever its source"},
		{"literal-token-77", "***", "a header named like a credential"},
		{"literal-dbpw", "${DB_PASSWORD}", "a process environment entry named like a secret"},
		{"sk_live_4242", "${STRIPE}", "listed under secrets:"},
		{"rk_live_9999", "${STRIPE_KEY}", "its name ends in KEY, even in args"},
		{"visible_name", "visible_name", "an ordinary value"},
		{"issue_refund", "issue_refund", "an ordinary value in a URL and a process environment"},
		{"fiber", "fiber", "an ordinary value in a tool name"},
		{"memory", "memory", "an ordinary value in a process environment"},
		{"tenant-abc", "tenant-abc", "an ordinary header"},
		{"fixed-key-1", "fixed-key-1", "Idempotency-Key is no credential"},
		{"/run/secrets/token", "/run/secrets/token", "TOKEN_FILE names where the token is"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("%s (%s) shows as %q, want %q", tc.in, tc.why, got, tc.want)
		}
	}
}

func TestSecretsListMustNameVariables(t *testing.T) {
	for _, src := range []string{"[\"${TOKEN}\"]", "[\"a-b\"]", "TOKEN"} {
		f := &File{Path: "f.yaml"}
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
			t.Fatal(err)
		}
		f.AddSecretVars(doc.Content[0])
		if len(f.Errs) != 1 || !strings.Contains(f.Errs[0].Msg, "secrets") {
			t.Errorf("secrets: %s: errors %v, want one about secrets", src, f.Errs)
		}
	}
}
