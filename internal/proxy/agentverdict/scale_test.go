package agentverdict

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sort"
	"testing"

	"github.com/idemtest/idemtest/internal/jsonvalue"
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
			if d, ok := regeneratedRef(c, *r, ignore); ok {
				return r, d
			}
		}
	}
	return nil, nil
}

// regeneratedRef is regenerated as it was before arguments were digested: on the decoded
// objects, every value compared as canonical JSON.
func regeneratedRef(a, b trace.Call, ignore []string) ([]string, bool) {
	av, aok := decodeArgs(a, ignore)
	bv, bok := decodeArgs(b, ignore)
	am, aIsMap := av.(map[string]any)
	bm, bIsMap := bv.(map[string]any)
	if !aok || !bok || !aIsMap || !bIsMap {
		return nil, false
	}
	var onlyA, onlyB []string
	shared := 0
	for k, v := range am {
		w, ok := bm[k]
		switch {
		case !ok:
			onlyA = append(onlyA, k)
		case jsonvalue.Canonical(v) != jsonvalue.Canonical(w):
			return nil, false
		default:
			shared++
		}
	}
	for k := range bm {
		if _, ok := am[k]; !ok {
			onlyB = append(onlyB, k)
		}
	}
	if shared == 0 || len(onlyA) > 0 && len(onlyB) > 0 {
		return nil, false
	}
	d := append(onlyA, onlyB...)
	sort.Strings(d)
	return d, true
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
		var digests Calls
		for _, c := range calls {
			digests.Add(Digest(c, ignore))
		}
		rs, err := findRetries(context.Background(), &digests)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range calls {
			if !c.Mutating || c.Key == "" || !hidesOutcome(c.Fault, c.Outcome == outcome.Info) {
				continue
			}
			got, gotDiffer := rs.find(&digests, i)
			want, wantDiffer := quadraticFindRetry(calls, i, ignore)
			if digestSeq(got) != seqOf(want) || !reflect.DeepEqual(gotDiffer, wantDiffer) {
				t.Fatalf("round %d, call #%d: index found %v %v, the scan %v %v", round, c.Seq, digestSeq(got), gotDiffer, seqOf(want), wantDiffer)
			}
		}
	}
}

func digestSeq(c *Call) int {
	if c == nil {
		return 0
	}
	return c.Seq
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
	one, _ := Judge(context.Background(), small, JudgeOptions{})
	if len(one.Findings) == 0 {
		t.Fatal("the small session has no finding: nothing is compared")
	}
	const n = 200
	all, _ := Judge(context.Background(), blocks(small, n), JudgeOptions{})
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
	_, _ = Judge(context.Background(), calls, JudgeOptions{})
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
	v, err := Judge(ctx, faultedSession(5000), JudgeOptions{})
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
				_, _ = Judge(context.Background(), calls, JudgeOptions{})
			}
		})
	}
}

// Calls that complete out of the agent's order are judged as if they had come in order, each
// with its own error and fault.
func TestCallsJudgedInTheAgentsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 50 {
		calls := randomCalls(rng, 60)
		for i := range calls {
			if calls[i].Outcome == outcome.Info && calls[i].Fault == "" {
				calls[i].Error = fmt.Sprintf("gateway timeout %d", i)
			}
		}
		want, _ := Judge(context.Background(), calls, JudgeOptions{})
		var shuffled Calls
		for _, i := range rng.Perm(len(calls)) {
			shuffled.Add(Digest(calls[i], nil))
		}
		got, err := JudgeCalls(context.Background(), &shuffled, JudgeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("judged out of order:\n%+v\nin order:\n%+v", got, want)
		}
		for i := range shuffled.Len() {
			if c := shuffled.At(i); c != Digest(calls[i], nil) {
				t.Fatalf("call %d after sorting: %+v, want %+v", i, c, Digest(calls[i], nil))
			}
		}
	}
}
