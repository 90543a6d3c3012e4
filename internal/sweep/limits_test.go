package sweep

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/idemtest/idemtest/internal/scenario"
)

// Building the scenario of one faulty run costs memory in proportion to the trace: four times
// the calls allocate about four times the bytes, not sixteen (bytes allocated are counted, not
// time, so a busy machine does not change the answer).
func TestRunBuildGrowsLinearly(t *testing.T) {
	allocated := func(n int) uint64 {
		s := benchSweeper(t, syntheticTrace(n))
		r := run{fault: LostResponse, call: s.plan.calls[0], giveUp: defaultGiveUp}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		sc, err := s.build(r)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(sc)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := allocated(150), allocated(600)
	t.Logf("150 calls: %d KiB, 600 calls: %d KiB (×%.1f)", small>>10, large>>10, float64(large)/float64(small))
	if large > 8*small {
		t.Errorf("4× the calls allocated %.1f× the bytes (%d KiB → %d KiB): building a run grows faster than the trace", float64(large)/float64(small), small>>10, large>>10)
	}
}

// The scenarios --write saves are built again after the sweep, one per faulty run, with the
// assertions the executed runs leave out.
func TestSpecsAreBuiltForWriting(t *testing.T) {
	s := benchSweeper(t, syntheticTrace(3))
	rep := &Report{sweeper: s, Baseline: &Cell{}}
	for _, pc := range s.plan.calls {
		for _, f := range Faults {
			rep.Cells = append(rep.Cells, &Cell{Seq: pc.seq, Fault: f, run: run{fault: f, call: pc, giveUp: defaultGiveUp}})
		}
	}
	specs := rep.Specs()
	if len(specs) != 9 {
		t.Fatalf("%d specs, want 9", len(specs))
	}
	for _, sp := range specs {
		asserts := 0
		for _, st := range sp.Steps {
			if st.Assert != "" {
				asserts++
			}
		}
		if asserts != 3 {
			t.Errorf("%s: %d assertions, want 3 (one per call ok in run 0)", sp.Name, asserts)
		}
		if _, err := sp.Scenario(s.base); err != nil {
			t.Errorf("%s: %v", sp.Name, err)
		}
	}
	// The run executed judges itself (compare): no assertion per call.
	sc, err := s.build(rep.Cells[0].run)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sc.Steps {
		if st.Kind == scenario.AssertStep {
			t.Errorf("the executed run has assertion step %s", st.ID)
		}
	}
}

// A sweep of more runs than MaxRuns is refused before the server hears a request, by the
// trace's own marks; the count includes every fault of every mutating call.
func TestRunRefusesOverMaxRuns(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "no", http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	base, err := scenario.AdHocScenario(context.Background(), scenario.AdHoc{MCPURL: srv.URL + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	planned := -1
	_, err = Run(context.Background(), base, "big.jsonl", syntheticTrace(4), Options{Endpoint: scenario.AdHocName, MaxRuns: 12,
		OnPlan: func(runs, _ int) { planned = runs }})
	var le *LimitError
	if !errors.As(err, &le) || le.Runs != 13 || le.Mutating != 4 || le.Max != 12 || !le.Recorded {
		t.Fatalf("err = %v (%+v), want a *LimitError of 13 runs over 12", err, le)
	}
	if n := requests.Load(); n != 0 || planned != -1 {
		t.Errorf("the server heard %d requests and OnPlan was told %d runs, want none", n, planned)
	}
}

// Planning stops at the first signal.
func TestPlanStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newPlan(ctx, syntheticTrace(1000), "idempotencyKey"); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
