package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/assert"
)

func TestCheckSection(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		wants []string
	}{
		{name: "typos are reported with their position and a suggestion", yaml: `check:
  missing_keys: reject
  tools:
    issue_refund: {argz: {amount: 1}}
`, wants: []string{`idemtest.yaml:2:3: unknown field "missing_keys" in check`, `did you mean "missing_key"?`,
			`idemtest.yaml:4:20: unknown field "argz" in check.tools.issue_refund`, `did you mean "args"?`}},
		{name: "policy", yaml: `check: {missing_key: rejet}
`, wants: []string{`idemtest.yaml:1:22: check.missing_key must be reject or accept, got "rejet"`, `did you mean "reject"?`}},
		{name: "args must be a mapping", yaml: `check: {tools: {t: {args: [1]}}}
`, wants: []string{`check.tools.t.args must be a mapping`}},
		{name: "templates are compiled", yaml: `check: {tools: {t: {args: {a: "{{ sesion }}"}}}}
`, wants: []string{`idemtest.yaml:1:`, `sesion`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "idemtest.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadConfig(dir, Options{Config: path})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("errors lack %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestCheckSectionLoads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "idemtest.yaml")
	yaml := `check:
  missing_key: accept
  tools:
    issue_refund: {args: {accountId: "acct_{{ session }}", amount: 5}}
    close_account: {skip: irreversible}
`
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := LoadConfig(dir, Options{Config: path})
	if err != nil {
		t.Fatal(err)
	}
	c := sc.Check
	if c == nil || c.MissingKey != "accept" || c.Tools["close_account"].Skip != "irreversible" {
		t.Fatalf("check = %+v", c)
	}
	args := c.Tools["issue_refund"].Args.(map[string]any)
	tmpl, ok := args["accountId"].(*assert.Template)
	if !ok || tmpl.Source != "acct_{{ session }}" || args["amount"] != 5 {
		t.Errorf("args = %#v", args)
	}
}
