package agentverdict

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/trace"
)

// quadraticFindRetry is findRetry as it was before the index: a scan of every later call,
// each canonicalised again. It is the reference the index must agree with.
func quadraticFindRetry(calls []trace.Call, i int, ignore []string) (retry *trace.Call, differ []string) {
	c := calls[i]
	sig, _ := signature(c, ignore)
	next := true
	for j := i + 1; j < len(calls); j++ {
		r := &calls[j]
		if !r.Mutating || r.Tool != c.Tool {
			continue
		}
		if s, _ := signature(*r, ignore); s == sig {
			return r, nil
		}
		if next {
			next = false
			if d, ok := regenerated(c, *r, ignore); ok {
				return r, d
			}
		}
	}
	return nil, nil
}

// randomCalls is a session of n calls drawn from few tools, arguments and keys, so that
// retries, regenerated arguments, reused keys and read-only calls all occur.
func randomCalls(rng *rand.Rand, n int) []trace.Call {
	argSets := []string{
		`{"accountId":"a","amount":10}`, `{"amount":10.0,"accountId":"a"}`, `{"accountId":"a","amount":10,"currency":"usd"}`,
		`{"accountId":"a"}`, `{"accountId":"b","amount":10}`, `{"accountId":"a","amount":11}`, `[1,2]`, `not json`, ``,
		`{"accountId":"a","amount":10,"meta":{"sentAt":1}}`, `{"accountId":"a","amount":10,"meta":{"sentAt":2}}`,
	}
	faults := []string{"", "", "", "lose-response", "timeout", "error:503", "delay:1s"}
	outcomes := []outcome.Outcome{outcome.OK, outcome.Fail, outcome.Info}
	calls := make([]trace.Call, n)
	for i := range calls {
		key := ""
		if rng.IntN(8) > 0 {
			key = fmt.Sprintf("k%d", rng.IntN(4))
		}
		args := argSets[rng.IntN(len(argSets))]
		if key != "" && len(args) > 1 && args[0] == '{' && args[len(args)-1] == '}' {
			args = args[:len(args)-1] + `,"idempotencyKey":"` + key + `"}`
		}
		calls[i] = trace.Call{Seq: i + 1, Tool: []string{"issue_refund", "issue_credit"}[rng.IntN(2)], Args: json.RawMessage(args),
			Key: key, KeyCarrier: "arg idempotencyKey", Mutating: rng.IntN(6) > 0, Outcome: outcomes[rng.IntN(3)], Fault: faults[rng.IntN(len(faults))]}
	}
	return calls
}

func TestIndexFindsTheRetriesTheScanFound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		calls := randomCalls(rng, 1+rng.IntN(40))
		ignore := [][]string{nil, {"meta.sentAt"}}[round%2]
		ix, err := newIndex(context.Background(), calls, ignore)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range calls {
			if !c.Mutating {
				continue
			}
			got, gotDiffer := ix.findRetry(calls, i)
			want, wantDiffer := quadraticFindRetry(calls, i, ignore)
			if got != want || !reflect.DeepEqual(gotDiffer, wantDiffer) {
				t.Fatalf("round %d, call #%d: index found %v %v, the scan %v %v", round, c.Seq, seqOf(got), gotDiffer, seqOf(want), wantDiffer)
			}
		}
	}
}

func seqOf(c *trace.Call) int {
	if c == nil {
		return 0
	}
	return c.Seq
}

// blocks repeats a small session n times, each copy with its own accounts and keys, so that
// the verdict on the whole is the verdict on one copy, n times over.
func blocks(small []trace.Call, n int) []trace.Call {
	out := make([]trace.Call, 0, len(small)*n)
	for b := range n {
		for _, c := range small {
			c.Seq += b * len(small)
			if c.Key != "" {
				c.Key = fmt.Sprintf("%s-b%d", c.Key, b)
			}
			c.Tool = fmt.Sprintf("%s_%d", c.Tool, b)
			out = append(out, c)
		}
	}
	return out
}

func TestLargeSessionJudgedAsItsParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	small := randomCalls(rng, 40)
	one := Judge(small, JudgeOptions{})
	if len(one.Findings) == 0 {
		t.Fatal("the small session has no finding: nothing is compared")
	}
	const n = 200
	all := Judge(blocks(small, n), JudgeOptions{})
	if all.Calls != n*one.Calls || all.Mutating != n*one.Mutating || all.Faults != n*one.Faults ||
		all.Violations != n*one.Violations || len(all.Findings) != n*len(one.Findings) {
		t.Fatalf("%d copies of a session judged as %+v findings %d; one copy: %+v findings %d", n,
			all, len(all.Findings), one, len(one.Findings))
	}
	for b := range n {
		for k, f := range one.Findings {
			g := all.Findings[b*len(one.Findings)+k]
			if g.Check != f.Check || g.Violation != f.Violation || len(g.Seq) != len(f.Seq) || g.Seq[0] != f.Seq[0]+b*len(small) {
				t.Fatalf("copy %d, finding %d: %+v, want as %+v", b, k, g, f)
			}
		}
	}
}

// faultedSession is the verdict's worst case before the index: every call a mutating one whose
// answer was lost, none retried, so that each was compared with every later call.
func faultedSession(n int) []trace.Call {
	calls := make([]trace.Call, n)
	for i := range calls {
		key := fmt.Sprintf("s-%d", i)
		calls[i] = trace.Call{Seq: i + 1, Tool: "issue_refund", Key: key, KeyCarrier: "arg idempotencyKey", Mutating: true,
			Args:    json.RawMessage(fmt.Sprintf(`{"accountId":"acct_%d","amount":10.5,"idempotencyKey":%q}`, i, key)),
			Outcome: outcome.Info, Fault: "lose-response", Result: json.RawMessage(`{"refundId":"re_1"}`)}
	}
	return calls
}

// allocs is how many heap allocations judging calls takes.
func allocs(calls []trace.Call) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	Judge(calls, JudgeOptions{})
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}

// The work of the verdict, counted in allocations (not time: the machine may be busy), grows
// with the number of calls, not with its square.
func TestJudgeIsNearLinear(t *testing.T) {
	small, large := allocs(faultedSession(250)), allocs(faultedSession(2000))
	if ratio := float64(large) / float64(small); ratio > 12 {
		t.Errorf("8 times the calls took %.1f times the allocations (%d, %d): want about 8", ratio, small, large)
	}
}

func TestJudgeStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v, err := JudgeContext(ctx, faultedSession(5000), JudgeOptions{})
	if err == nil || len(v.Findings) != 0 {
		t.Fatalf("a cancelled verdict returned %d findings, error %v", len(v.Findings), err)
	}
}

func BenchmarkJudge(b *testing.B) {
	for _, n := range []int{2000, 4000, 8000} {
		calls := faultedSession(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Judge(calls, JudgeOptions{})
			}
		})
	}
}
