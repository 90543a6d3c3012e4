package scenariogen

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// A saved assertion stays on the line where it is written, however long: the YAML emitter's
// default 80-column folding is valid YAML but splits an expression a reader (or a review's grep)
// looks for whole.
func TestMarshalKeepsLongScalarsOnOneLine(t *testing.T) {
	long := "len(state_after_retry.result.refunds ?? []) - len(state_before.result.refunds ?? []) <= 1 && toJSON(state_before.result) != toJSON(state_after_retry.result)"
	s := &Spec{
		Name: "issue_refund: " + strings.Repeat("a retry after a client timeout does not execute again ", 2),
		Tool: "issue_refund", Check: "timeout-retry", Endpoint: "api",
		Steps: []Step{{ID: "first", CallTool: "issue_refund", Args: map[string]any{"note": strings.Repeat("x ", 80)}}, {Assert: long}},
	}
	b, err := Marshal(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "assert: "+long+"\n") {
		t.Fatalf("the assertion is not on one line:\n%s", b)
	}
	var back struct {
		Name  string `yaml:"name"`
		Steps []Step `yaml:"steps"`
	}
	if err := yaml.Unmarshal(b, &back); err != nil {
		t.Fatalf("the written scenario does not parse: %v\n%s", err, b)
	}
	if back.Name != s.Name || back.Steps[1].Assert != long || back.Steps[0].Args["note"] != s.Steps[0].Args["note"] {
		t.Fatalf("the written scenario reads back differently:\n%s", b)
	}
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "- assert:") || strings.HasPrefix(strings.TrimSpace(line), "name:") {
			continue
		}
		if strings.HasPrefix(line, "    ") && !strings.Contains(line, ":") && !strings.HasPrefix(strings.TrimSpace(line), "- ") {
			t.Errorf("line %d continues a folded scalar: %q\n%s", i+1, line, b)
		}
	}
}
