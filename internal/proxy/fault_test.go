package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/proxy/fault"
)

func TestParseFault(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want fault.Fault
		err  string
	}{
		{in: "lose-response:issue_refund#1", want: fault.Fault{Kind: fault.LoseResponse, Tool: "issue_refund", N: 1}},
		{in: "timeout:send_email#3", want: fault.Fault{Kind: fault.Timeout, Tool: "send_email", N: 3}},
		{in: "error:503:issue_refund#2", want: fault.Fault{Kind: fault.Error, Status: 503, Tool: "issue_refund", N: 2}},
		{in: "error:issue_refund#2", want: fault.Fault{Kind: fault.Error, Status: 503, Tool: "issue_refund", N: 2}},
		{in: "delay:2s:issue_refund#1", want: fault.Fault{Kind: fault.Delay, Delay: 2 * time.Second, Tool: "issue_refund", N: 1}},
		{in: "lose-response:issue_refund", err: "no TOOL#N"},
		{in: "lose-response:issue_refund#0", err: "N must be a call number"},
		{in: "explode:issue_refund#1", err: `unknown kind "explode"`},
		{in: "error:200:issue_refund#1", err: "400-599"},
		{in: "delay:soon:issue_refund#1", err: "positive duration"},
		{in: "issue_refund#1", err: "no tool"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := fault.Parse(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestFaultRateIsReproducible(t *testing.T) {
	draw := func(seed uint64) string {
		r := NewRecorder(Options{FaultRate: 0.5, Seed: seed, Mutating: []string{"issue_refund"}})
		var b strings.Builder
		for range 40 {
			p := r.Begin("issue_refund", nil, "k")
			b.WriteString(map[bool]string{true: "x", false: "."}[p.Fault.Kind == fault.LoseResponse])
			if q := r.Begin("list_refunds", nil, ""); q.Fault.Kind != "" {
				t.Fatalf("a read-only call got fault %s", q.Fault)
			}
		}
		return b.String()
	}
	a, b := draw(7), draw(7)
	if a != b {
		t.Errorf("seed 7 drew %s then %s", a, b)
	}
	if !strings.Contains(a, "x") || !strings.Contains(a, ".") {
		t.Errorf("rate 0.5 over 40 calls drew %s", a)
	}
	if draw(8) == a {
		t.Errorf("seeds 7 and 8 drew the same faults %s", a)
	}
}
