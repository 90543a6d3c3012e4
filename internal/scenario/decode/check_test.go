package decode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
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
		{name: "key_ttl is a duration", yaml: `check: {key_ttl: 5x}
`, wants: []string{`idemtest.yaml:1:18: check.key_ttl`}},
		{name: "snapshot fields", yaml: `check:
  snapshot:
    - {tol: list_refunds}
    - {tool: list_refunds, args: [1]}
    - {tool: list_refunds}
`, wants: []string{`idemtest.yaml:3:8: unknown field "tol" in check.snapshot[0]`, `did you mean "tool"?`, `check.snapshot[0] has no tool`,
			`idemtest.yaml:4:34: check.snapshot[1].args must be a mapping`, `idemtest.yaml:5:14: check.snapshot[2]: list_refunds is already listed`}},
		{name: "snapshot is a list", yaml: `check: {snapshot: {tool: t}}
`, wants: []string{`idemtest.yaml:1:19: check.snapshot must be a list`}},
		{name: "effects are compiled against the probes and sinks", yaml: `probes:
  refunds: {http: {url: "http://127.0.0.1:1/refunds"}}
check:
  tools:
    issue_refund: {efects: "1", args: {}}
    close_account: {effects: "len(refundz.refunds)"}
`, wants: []string{`idemtest.yaml:5:20: unknown field "efects" in check.tools.issue_refund`, `did you mean "effects"?`,
			`idemtest.yaml:6:`, `check.tools.close_account.effects`, `refundz`, `refunds`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "idemtest.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := decodeConfig(path)
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
    close_account: {skip: irreversible, effects: "len(refunds.refunds) + len(payments.requests)"}
  key_ttl: 2s
  snapshot:
    - {tool: list_refunds, args: {accountId: "acct_{{ session }}"}}
probes:
  refunds: {http: {url: "http://127.0.0.1:1/refunds"}}
sinks:
  payments: {routes: {charge: {method: POST, path: /charge}}}
`
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := decodeConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	c := sc.Check
	if c == nil || c.MissingKey != "accept" || c.Tools["close_account"].Skip != "irreversible" {
		t.Fatalf("check = %+v", c)
	}
	if c.KeyTTL != 2*time.Second || len(c.Snapshot) != 1 || c.Snapshot[0].Tool != "list_refunds" || c.Snapshot[0].Pos.Line != 8 {
		t.Errorf("key_ttl/snapshot = %v %+v", c.KeyTTL, c.Snapshot)
	}
	if e := c.Tools["close_account"].Effects; e == nil || e.Source != "len(refunds.refunds) + len(payments.requests)" || c.Tools["close_account"].EffectsPos.Line != 5 {
		t.Errorf("effects = %+v", c.Tools["close_account"])
	}
	if _, ok := c.Snapshot[0].Args.(map[string]any)["accountId"].(*assert.Template); !ok {
		t.Errorf("snapshot args = %#v", c.Snapshot[0].Args)
	}
	args := c.Tools["issue_refund"].Args.(map[string]any)
	tmpl, ok := args["accountId"].(*assert.Template)
	if !ok || tmpl.Source != "acct_{{ session }}" || args["amount"] != 5 {
		t.Errorf("args = %#v", args)
	}
}

// decodeConfig reads and decodes the config at path; its problems are the error.
func decodeConfig(path string) (*ConfigFile, error) {
	f, root := yamlfile.Read(path, os.LookupEnv)
	c := Config(context.Background(), f, root)
	if len(f.Errs) > 0 {
		return nil, f.Errs
	}
	return c, nil
}

// TestCheckSectionPositions: the check: and coverage: sections' errors, each whole and at the
// value it is about.
func TestCheckSectionPositions(t *testing.T) {
	checkBad(t, []badCase{
		{name: "not a mapping", src: "check: [a]\n",
			want: []string{"1:8: check must be a mapping (key: value lines), got a list"}},
		{name: "missing_key far from both", src: "check: {missing_key: maybe}\n",
			want: []string{`1:22: check.missing_key must be reject or accept, got "maybe"`}},
		{name: "key without format", src: "check: {key: {length: 10}}\n",
			want: []string{"1:14: check.key needs a format"}},
		{name: "key format unknown", src: "check: {key: {format: guid}}\n",
			want: []string{`1:23: check.key.format "guid": use uuid, uuidv7, ulid or a template with {random} or {index}, such as "ik_{random}" with a length`}},
		{name: "key length zero", src: "check: {key: {format: \"ik_{random}\", length: 0}}\n",
			want: []string{"1:46: check.key.length is 0, out of range"}},
		{name: "key length above the maximum", src: "check: {key: {format: \"ik_{random}\", length: 256}}\n",
			want: []string{"1:46: check.key.length is 256, out of range"}},
		{name: "key_ttl negative", src: "check: {key_ttl: -1s}\n",
			want: []string{"1:18: check.key_ttl must not be negative, got -1s"}},
		{name: "tools entry not a mapping", src: "check: {tools: {t: skip}}\n",
			want: []string{`1:20: check.tools.t must be a mapping (key: value lines), got "skip"`}},
		{name: "effects not compiled", src: "check: {tools: {t: {effects: \"len(x\"}}}\n",
			want: []string{"1:35: check.tools.t.effects: unexpected token EOF"}},
		{name: "snapshot entry without tool", src: "check:\n  snapshot:\n    - {args: {}}\n",
			want: []string{"3:7: check.snapshot[0] has no tool"}},
		{name: "coverage exempt without reason", src: "coverage: {exempt: {create_charge: \"\"}}\n",
			want: []string{"1:36: coverage.exempt.create_charge has no reason"}},
		{name: "coverage unknown field", src: "coverage: {exmpt: {a: b}}\n",
			want: []string{`1:12: unknown field "exmpt" in coverage (did you mean "exempt"?)`}},
	}, configErrors)
}

// TestCoverageSection decodes coverage.exempt.
func TestCoverageSection(t *testing.T) {
	c, errs := configOf(t, "coverage:\n  exempt: {create_charge: tested by the payments suite}\n")
	if len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	if c.Coverage == nil || c.Coverage.Pos.Line != 2 || c.Coverage.Exempt["create_charge"] != "tested by the payments suite" {
		t.Errorf("coverage %+v", c.Coverage)
	}
}

// TestAuditSectionPositions: the audit: section's errors, at the value each is about.
func TestAuditSectionPositions(t *testing.T) {
	checkBad(t, []badCase{
		{name: "unknown field", src: "audit: {execution_spam: refund.execute}\n",
			want: []string{`1:9: unknown field "execution_spam" in audit (did you mean "execution_span"?)`}},
		{name: "bad rate", src: "audit: {max_hit_rate: lots}\n",
			want: []string{`1:23: audit.max_hit_rate: "lots" is no rate: want 5%, 0.05 or off`}},
		{name: "rate over 100%", src: "audit: {max_conflict_rate: 120%}\n",
			want: []string{`1:28: audit.max_conflict_rate: "120%" is no rate: want 5%, 0.05 or off`}},
		{name: "bad glob", src: "audit: {execution_span: \"refund[\"}\n",
			want: []string{`1:25: audit.execution_span "refund[": syntax error in pattern`}},
		{name: "empty list", src: "audit:\n  key_attrs: []\n",
			want: []string{"2:14: audit.key_attrs is empty"}},
		{name: "window shorter than ttl", src: "audit: {ttl: 24h, window: 1h}\n",
			want: []string{"1:27: audit.window 1h0m0s is shorter than audit.ttl 24h0m0s"}},
	}, configErrors)
}

// TestAuditSection decodes every field of audit:.
func TestAuditSection(t *testing.T) {
	c, errs := configOf(t, `audit:
  key_args: [token]
  key_attrs: [app.key]
  session_attrs: [app.session]
  replay_attrs: [app.replayed]
  execution_span: "db.*"
  ttl: 24h
  window: 72h
  max_hit_rate: 10%
  max_conflict_rate: 0.02
  mutating: [issue_refund]
`)
	if len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	a := c.Audit
	if a == nil || a.Pos.Line != 2 || a.KeyArgs[0] != "token" || a.KeyAttrs[0] != "app.key" || a.SessionAttrs[0] != "app.session" ||
		a.ReplayAttrs[0] != "app.replayed" || a.ExecutionSpan != "db.*" || a.TTL != 24*time.Hour || a.Window != 72*time.Hour ||
		!a.MaxHitRateSet || a.MaxHitRate != 0.1 || !a.MaxConflictRateSet || a.MaxConflictRate != 0.02 || a.Mutating[0] != "issue_refund" {
		t.Errorf("audit %+v", a)
	}
	if c, _ := configOf(t, "audit: {max_hit_rate: off}\n"); c.Audit.MaxHitRate != -1 || !c.Audit.MaxHitRateSet {
		t.Errorf("max_hit_rate off: %+v", c.Audit)
	}
}
