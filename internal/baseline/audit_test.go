package baseline

import (
	"slices"
	"testing"
)

// TestParseAudit: an audit report's violations are failures by tool and kind (one per pair,
// whatever the keys), its non-violations are none, and every tool is a subject.
func TestParseAudit(t *testing.T) {
	b := []byte(`{"report":"audit","version":1,"tools":[{"tool":"issue_refund"},{"tool":"get_order"}],"findings":[
		{"kind":"double-execution","violation":true,"tool":"issue_refund","key":"k1"},
		{"kind":"double-execution","violation":true,"tool":"issue_refund","key":"k2"},
		{"kind":"keyless-mutating","violation":false,"tool":"get_order"},
		{"kind":"hit-rate","violation":true}]}`)
	rep, err := Parse(b, "audit.json", Audit)
	if err != nil {
		t.Fatal(err)
	}
	want := []Failure{{"tool issue_refund", "double-execution"}, {"audit", "hit-rate"}}
	if !slices.Equal(rep.Failures, want) {
		t.Errorf("failures %v, want %v", rep.Failures, want)
	}
	if !slices.Equal(rep.Subjects, []string{"audit", "tool issue_refund", "tool get_order"}) {
		t.Errorf("subjects %v", rep.Subjects)
	}
	if _, err := Parse(b, "audit.json", Run); err == nil {
		t.Error("an audit report was read as a run's baseline")
	}
}
