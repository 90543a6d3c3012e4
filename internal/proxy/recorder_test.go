package proxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/proxy/fault"
)

// draw sends n calls of a mutating tool through a recorder and returns the fault of each.
func draw(opts Options, n int) []string {
	opts.Mutating = []string{"issue_refund"}
	r := NewRecorder(opts)
	out := make([]string, n)
	for i := range out {
		out[i] = r.Begin("issue_refund", nil, fmt.Sprint("k", i)).Fault.String()
	}
	return out
}

func TestFaultRateDrawsKindsReproducibly(t *testing.T) {
	kinds, err := fault.ParseKinds([]string{"lose-response", "timeout", "error:500"})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{FaultRate: 0.5, FaultKinds: kinds, Seed: 7}
	first := draw(opts, 60)
	if again := draw(opts, 60); strings.Join(again, ",") != strings.Join(first, ",") {
		t.Errorf("the same seed drew differently:\n%q\n%q", first, again)
	}
	opts.Seed = 8
	if other := draw(opts, 60); strings.Join(other, ",") == strings.Join(first, ",") {
		t.Errorf("seeds 7 and 8 drew the same faults: %q", first)
	}
	count := map[string]int{}
	for _, f := range first {
		count[f]++
	}
	for _, k := range []string{"lose-response", "timeout", "error:500", ""} {
		if count[k] == 0 {
			t.Errorf("60 calls at rate 0.5 drew no %q: %v", k, count)
		}
	}
	// One kind, the default: every fault drawn is a lost response.
	for _, f := range draw(Options{FaultRate: 1, Seed: 1}, 5) {
		if f != "lose-response" {
			t.Errorf("default kind drew %q, want lose-response", f)
		}
	}
}

func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"lose-response", "error", "delay:2s"}, "[lose-response error:503 delay:2s]"},
		{[]string{"timeout:x"}, `--fault-kinds "timeout:x": timeout takes no argument`},
		{[]string{"reset"}, `--fault-kinds "reset": unknown kind "reset"`},
		{[]string{"error:200"}, "error status must be 400-599"},
	} {
		t.Run(strings.Join(tc.in, ","), func(t *testing.T) {
			fs, err := fault.ParseKinds(tc.in)
			got := fmt.Sprint(fs)
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
