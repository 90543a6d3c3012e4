package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/trace"
)

// syntheticTrace is an agent session of n mutating calls, each with its own arguments, key and
// answer, as the proxy records them.
func syntheticTrace(n int) []trace.Call {
	calls := make([]trace.Call, n)
	for i := range calls {
		args, _ := json.Marshal(map[string]any{"accountId": fmt.Sprintf("acct_%d", i%50), "amount": i + 1, "idempotencyKey": fmt.Sprintf("agent-%d", i)})
		res, _ := json.Marshal(map[string]any{"refundId": fmt.Sprintf("re_%016x", i), "accountId": fmt.Sprintf("acct_%d", i%50), "amount": i + 1, "status": "succeeded"})
		calls[i] = trace.Call{Seq: i + 1, Tool: "issue_refund", Args: args, Key: fmt.Sprintf("agent-%d", i), KeyCarrier: "arg idempotencyKey",
			Mutating: true, Outcome: "ok", Result: res}
	}
	return calls
}

// benchSweeper is a sweeper planned for calls as Run plans it, with one read-only tool showing
// the state; nothing is started.
func benchSweeper(tb testing.TB, calls []trace.Call) *sweeper {
	base, err := scenario.AdHocScenario(context.Background(), scenario.AdHoc{MCPURL: "http://127.0.0.1:1/mcp"})
	if err != nil {
		tb.Fatal(err)
	}
	def := base.Endpoints[scenario.AdHocName]
	p, err := newPlan(context.Background(), calls, def.Key.Arg)
	if err != nil {
		tb.Fatal(err)
	}
	s := &sweeper{base: base, def: def, plan: p, name: "bench.jsonl", snapshots: []string{"list_refunds"}, ok0: map[string]bool{}}
	s.reads = []read{{label: "list_refunds (state after the run)", before: "state1_before", after: "state1_after"}}
	for _, pc := range p.calls {
		s.ok0[pc.id] = true
	}
	return s
}

// BenchmarkPlan measures what a sweep does before it sends a call, for a trace of N mutating
// calls: plan the trace, then build the scenario of run 0 and of the first call's three faulty
// runs as each run builds its own, keeping what the sweep keeps of each run. peak-heap-MB is the
// largest live heap seen after a build (runtime.ReadMemStats, after a GC); cpu-ms/op is the
// process's user and system time per plan (getrusage, without the GCs of the sampling), which a
// machine shared with other jobs distorts less than ns/op.
//
//	go test -run '^$' -bench BenchmarkPlan -benchtime 1x -count 3 ./internal/sweep
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{600, 1000, 2000, 6000} {
		calls := syntheticTrace(n)
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			var peak uint64
			var cpu time.Duration
			sample := func() {
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
			for range b.N {
				t0 := cpuTime()
				s := benchSweeper(b, calls)
				var kept []*Cell
				runs := []run{{fault: Clean}}
				for _, f := range Faults {
					runs = append(runs, run{fault: f, call: s.plan.calls[0], giveUp: defaultGiveUp})
				}
				for _, r := range runs {
					c, sc := buildRun(b, s, r)
					kept = append(kept, c)
					b.StopTimer()
					cpu += cpuTime() - t0
					sample()
					runtime.KeepAlive(sc)
					t0 = cpuTime()
					b.StartTimer()
				}
				runtime.KeepAlive(kept)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
