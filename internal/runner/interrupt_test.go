package runner

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idemtest/idemtest/internal/result"
)

// TestInterruptIsNotAVerdict cancels the run while a call is in flight: the scenario is
// interrupted (not passed, not failed, no failure blaming the tool), and the scenario that had
// not started yet is interrupted too.
func TestInterruptIsNotAVerdict(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the client leaving
		arrived <- struct{}{}
		<-r.Context().Done() // answer only when the client gives up
	}))
	defer srv.Close()
	t.Setenv("SLOW_URL", srv.URL)
	list := load(t, `
name: cut short
trials: 3
endpoints:
  e:
    http: {url: "${SLOW_URL}/tools/{tool}"}
steps:
  - id: first
    call_tool: issue_refund
    args: {n: 1}
`)
	later := *list[0]
	later.Name = "never started"
	list = append(list, &later)

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	rep := Run(ctx, list, Options{})
	if !rep.Interrupted || rep.Err != nil || rep.Failed() {
		t.Fatalf("report: interrupted %v, err %v, failed %v", rep.Interrupted, rep.Err, rep.Failed())
	}
	cut := rep.Scenarios[0]
	if cut.Status != result.Interrupted || cut.Failure != nil || cut.FailedTrial != nil || cut.TrialsRun != 0 || cut.TrialsFailed != 0 {
		t.Errorf("cut scenario: status %s, failure %+v, trials run %d", cut.Status, cut.Failure, cut.TrialsRun)
	}
	if cut.Cut == nil || len(cut.Cut.Calls) != 1 || cut.Cut.Calls[0].Outcome != "info" {
		t.Errorf("the cut trial's call is not kept: %+v", cut.Cut)
	}
	if s := rep.Scenarios[1]; s.Status != result.Interrupted || s.TrialsRun != 0 {
		t.Errorf("scenario never started: status %s, trials run %d", s.Status, s.TrialsRun)
	}
}

// TestInterruptBeforeServicesStart: services that never became ready because of the interrupt
// are not an error; every scenario is interrupted.
func TestInterruptBeforeServicesStart(t *testing.T) {
	list := load(t, `
name: waits for a service
services:
  never:
    command: [sleep, "60"]
    ready: {tcp: "127.0.0.1:{{ port }}", timeout: 60s}
endpoints:
  e:
    http: {url: "http://127.0.0.1:{{ services.never.port }}/tools/{tool}"}
steps:
  - call_tool: issue_refund
    args: {n: 1}
`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep := Run(ctx, list, Options{})
	if !rep.Interrupted || rep.Err != nil || rep.Failed() {
		t.Fatalf("report: interrupted %v, err %v, failed %v", rep.Interrupted, rep.Err, rep.Failed())
	}
	if len(rep.Scenarios) != 1 || rep.Scenarios[0].Status != result.Interrupted {
		t.Errorf("scenarios: %+v", rep.Scenarios)
	}
}

// TestFailFastSkipsTheRest: a scenario stopped by --fail-fast is skipped, not interrupted: the
// user did not interrupt anything.
func TestFailFastSkipsTheRest(t *testing.T) {
	list := load(t, `
name: fails
steps:
  - assert: "false"
`)
	other := *list[0]
	other.Name = "not reached"
	list = append(list, &other)
	rep := Run(context.Background(), list, Options{FailFast: true})
	if rep.Interrupted || rep.Scenarios[0].Status != result.Failed || rep.Scenarios[1].Status != result.Skipped {
		t.Errorf("interrupted %v, statuses %s, %s", rep.Interrupted, rep.Scenarios[0].Status, rep.Scenarios[1].Status)
	}
}
