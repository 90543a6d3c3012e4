package assert

import (
	"reflect"
	"testing"
)

func TestResultPaths(t *testing.T) {
	env := Names("first", "retry")
	p, err := Compile(`retry.result.refundID == first.result.refundID && first.result.a.b > 1 && first.result.a != nil && first.result?.note == nil && first.ok`, env)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rp := range p.ResultPaths() {
		got = append(got, rp.String())
	}
	want := []string{"retry.result.refundID", "first.result.refundID", "first.result.a.b"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("paths %v, want %v", got, want)
	}
	answer := CallResult{Result: map[string]any{"refundId": "re_1", "a": map[string]any{"b": 2.0}}}
	rp := p.ResultPaths()
	if found, absent, known := rp[1].Lookup(map[string]any{"first": answer}); found || !known || absent.Hint() != "did you mean refundId?" {
		t.Errorf("refundID: found %v known %v hint %q", found, known, absent.Hint())
	}
	if found, _, known := rp[2].Lookup(map[string]any{"first": answer}); !found || !known {
		t.Errorf("a.b: found %v known %v", found, known)
	}
	if _, _, known := rp[1].Lookup(map[string]any{"first": CallResult{}}); known {
		t.Error("an absent answer cannot tell")
	}
}
