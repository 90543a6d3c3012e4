package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
	scenarioload "github.com/idemtest/idemtest/internal/scenario/load"
)

// echoServer is a real HTTP tool server that answers every call with what it received, and
// records when each request arrived. A call whose arguments say hold: N is answered only once N
// calls with its key have arrived: the copies of a fan-out of N then all arrive before any
// answer, whatever the machine's load, without guessing a handling time.
type echoServer struct {
	*httptest.Server
	mu       sync.Mutex
	arrivals []time.Time
	keys     []string
	held     map[string]*heldKey
}

type heldKey struct {
	n    int
	all  chan struct{}
	want int
}

func newEchoServer(t *testing.T) *echoServer {
	e := &echoServer{held: map[string]*heldKey{}}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		body, _ := io.ReadAll(r.Body)
		var args map[string]any
		json.Unmarshal(body, &args)
		key := r.Header.Get("Idempotency-Key")
		e.mu.Lock()
		e.arrivals = append(e.arrivals, now)
		e.keys = append(e.keys, key)
		var wait chan struct{}
		if hold, ok := args["hold"].(float64); ok {
			h := e.held[key]
			if h == nil {
				h = &heldKey{all: make(chan struct{}), want: int(hold)}
				e.held[key] = h
			}
			if h.n++; h.n == h.want {
				close(h.all)
			}
			wait = h.all
		}
		e.mu.Unlock()
		if wait != nil {
			select {
			case <-wait:
			case <-r.Context().Done():
				return
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"tool": strings.TrimPrefix(r.URL.Path, "/tools/"), "key": key, "args": args})
	}))
	t.Cleanup(e.Close)
	return e
}

// load loads one scenario with an empty config, so no idemtest.yaml above the temp dir applies.
func load(t *testing.T, yaml string) []*scenario.Scenario {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.yaml")
	cfg := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := scenarioload.Scenarios(context.Background(), []string{path}, scenarioload.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func TestKeysAndAssertions(t *testing.T) {
	srv := newEchoServer(t)
	t.Setenv("ECHO_URL", srv.URL)
	list := load(t, `
name: keys
trials: 2
endpoints:
  e:
    http: {url: "${ECHO_URL}/tools/{tool}"}
    mutating: [issue_refund]
steps:
  - id: a
    call_tool: issue_refund
    args: {n: 1}
    verdict: off   # the echo server executes every call; this test is about keys
  - id: b
    call_tool: issue_refund
    args: {n: "{{ a.result.args.n + 1 }}"}
  - id: again
    retry_of: a
    verdict: off
  - id: explicit
    call_tool: issue_refund
    key: "mine-{{ trial }}"
  - id: nokey
    call_tool: issue_refund
    without_key: true
    expect: ok
  - id: read
    call_tool: list_refunds
  - assert: a.key == session + "-0" && b.key == session + "-1"
  - assert: again.key == a.key && again.result.args.n == 1
  - assert: b.result.args.n == 2
  - assert: explicit.key == "mine-" + string(trial)
  - assert: nokey.key == "" && read.key == "" && read.result.key == ""
`)
	rep := Run(context.Background(), list, Options{Session: "pinned"})
	r := rep.Scenarios[0]
	if r.Status != result.Passed {
		t.Fatalf("status %s: %+v", r.Status, r.Failure)
	}
	if r.TrialsPassed != 2 || r.FailedTrial != nil || r.Trial1.Session != "pinned" {
		t.Errorf("trials %d, session %s", r.TrialsPassed, r.Trial1.Session)
	}
	if r.Metrics.Calls != 12 || r.Metrics.Keyed != 8 || r.Metrics.Retries != 2 {
		t.Errorf("metrics %+v", r.Metrics)
	}
	// Every trial is kept with every call and the arguments it sent.
	if len(r.History) != 2 || r.History[0] != r.Trial1 || len(r.History[1].Calls) != 6 || r.History[1].Start.IsZero() {
		t.Fatalf("history: %d trials", len(r.History))
	}
	if c := r.History[1].Calls[0]; c.Step != "a" || fmt.Sprint(c.Args["n"]) != "1" {
		t.Errorf("call a sent %v", c.Args)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if !contains(srv.keys, "pinned-2-0") {
		t.Errorf("trial 2 did not use session pinned-2: %v", srv.keys)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestFanoutReleasesTogether(t *testing.T) {
	srv := newEchoServer(t)
	t.Setenv("ECHO_URL", srv.URL)
	list := load(t, `
name: fanout
endpoints:
  e:
    http: {url: "${ECHO_URL}/tools/{tool}"}
steps:
  - id: burst
    call_tool: issue_refund
    args: {hold: 16}
    fanout: 16
    verdict: off   # the echo server ignores keys: this test is about the release
  - assert: burst.ok == 16 && len(burst.calls) == 16 && burst.spread_us > 0
  - assert: len(uniq(map(burst.calls, .key))) == 1
  # The server answers none before all 16 arrived, so every copy left before the first answer.
  - assert: burst.overlapped && all(burst.calls, .released_us <= burst.spread_us && .answered_us >= .released_us)
`)
	rep := Run(context.Background(), list, Options{})
	r := rep.Scenarios[0]
	if r.Status != result.Passed {
		t.Fatalf("status %s: %+v", r.Status, r.Failure)
	}
	if r.Fanouts != 1 || r.Overlapped != 1 {
		t.Errorf("fan-outs %d, overlapped %d; want 1 and 1", r.Fanouts, r.Overlapped)
	}
	if u := r.Metrics.Unjudged; len(u) != 1 || u[0].Reason != result.UnjudgedOff || u[0].Calls != 16 || !r.Metrics.NoneJudged() {
		t.Errorf("unjudged %+v", u)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.arrivals) != 16 {
		t.Errorf("the server saw %d copies, want 16", len(srv.arrivals))
	}
	t.Logf("16 copies: reported spread %.1fµs", r.Metrics.SpreadMaxUS)
}

func TestAssertionFailureIsExplained(t *testing.T) {
	srv := newEchoServer(t)
	t.Setenv("ECHO_URL", srv.URL)
	list := load(t, `
name: explained
endpoints:
  e:
    http: {url: "${ECHO_URL}/tools/{tool}"}
steps:
  - id: a
    call_tool: issue_refund
    args: {n: 1}
  - assert: a.result.args.n == 2
    eventually: 120ms
`)
	start := time.Now()
	rep := Run(context.Background(), list, Options{})
	r := rep.Scenarios[0]
	if r.Status != result.Failed || r.Failure.Kind != "assert" {
		t.Fatalf("status %s %+v", r.Status, r.Failure)
	}
	if time.Since(start) < 120*time.Millisecond {
		t.Error("eventually did not wait for its deadline")
	}
	if got := strings.Join(r.Failure.Explanation, "\n"); !strings.Contains(got, "a.result.args.n = 1, want == 2") {
		t.Errorf("explanation: %s", got)
	}
	if r.Failure.Pos.Line != 10 || !strings.Contains(r.Failure.Message, "still false after 120ms") {
		t.Errorf("failure %+v", r.Failure)
	}
}

func TestRetryPolicy(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"done":true}`))
	}))
	defer srv.Close()
	t.Setenv("ECHO_URL", srv.URL)
	list := load(t, `
name: retry
endpoints:
  e:
    http: {url: "${ECHO_URL}/tools/{tool}"}
steps:
  - id: r
    call_tool: issue_refund
    retry: {attempts: 5, on: [5xx], backoff: 1ms}
  - assert: r.ok && r.attempts == 3 && r.result.done
`)
	rep := Run(context.Background(), list, Options{})
	if r := rep.Scenarios[0]; r.Status != result.Passed {
		t.Fatalf("status %s: %+v", r.Status, r.Failure)
	}
	keys := map[string]bool{}
	for _, c := range rep.Scenarios[0].Trial1.Calls {
		keys[c.Key] = true
	}
	if len(keys) != 1 || len(rep.Scenarios[0].Trial1.Calls) != 3 {
		t.Errorf("attempts used keys %v over %d calls; want one key, 3 calls", keys, len(rep.Scenarios[0].Trial1.Calls))
	}
}

func TestSelect(t *testing.T) {
	list := []*scenario.Scenario{{Name: "alpha", Tags: []string{"x"}}, {Name: "beta", Tags: []string{"y"}}, {Name: "gamma"}}
	for _, tc := range []struct {
		name string
		tags []string
		run  string
		want int
	}{
		{"all", nil, "", 3},
		{"tag", []string{"y"}, "", 1},
		{"regex", nil, "^(alpha|gamma)$", 2},
		{"both", []string{"x"}, "beta", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var re *regexp.Regexp
			if tc.run != "" {
				re = regexp.MustCompile(tc.run)
			}
			if got := len(Select(list, tc.tags, re)); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestTrialsAsStatistics(t *testing.T) {
	srv := newEchoServer(t)
	t.Setenv("ECHO_URL", srv.URL)
	list := load(t, `
name: half the trials fail
trials: 6
endpoints:
  e:
    http: {url: "${ECHO_URL}/tools/{tool}"}
steps:
  - call_tool: issue_refund
  - assert: trial % 2 == 1
`)
	rep := Run(context.Background(), list, Options{})
	r := rep.Scenarios[0]
	if r.Status != result.Failed || r.TrialsRun != 6 || r.TrialsFailed != 3 || r.TrialsPassed != 3 || r.FailedTrial.Index != 2 {
		t.Errorf("status %s run %d failed %d passed %d first failing trial %d; want all 6 run, 3 failed, the first in trial 2",
			r.Status, r.TrialsRun, r.TrialsFailed, r.TrialsPassed, r.FailedTrial.Index)
	}
	rep = Run(context.Background(), list, Options{FailFast: true})
	if r := rep.Scenarios[0]; r.TrialsRun != 2 {
		t.Errorf("--fail-fast ran %d trials, want 2", r.TrialsRun)
	}
}

func TestFanoutSyncModesInScenarios(t *testing.T) {
	srv := newEchoServer(t)
	t.Setenv("ECHO_URL", srv.URL)
	list := load(t, `
name: sync modes
endpoints:
  e:
    http: {url: "${ECHO_URL}/tools/{tool}"}
steps:
  - id: lb
    call_tool: issue_refund
    args: {hold: 4}
    fanout: 4
    sync: last-byte
    verdict: off   # the echo server executes every copy; this test is about the release
  - id: st
    call_tool: issue_refund
    fanout: 4
    stagger: 1ms..2ms
    verdict: off
  - assert: lb.ok == 4 && lb.overlapped && st.ok == 4
  - assert: all(lb.calls, .released_us <= lb.spread_us && .answered_us > .released_us)
  - assert: all(st.calls, .offset_us >= 1000 && .offset_us <= 2000)
`)
	rep := Run(context.Background(), list, Options{})
	if r := rep.Scenarios[0]; r.Status != result.Passed || r.Fanouts != 2 {
		t.Fatalf("status %s fanouts %d: %+v", r.Status, r.Fanouts, r.Failure)
	}
}

func TestShard(t *testing.T) {
	var list []*scenario.Scenario
	for i := range 7 {
		list = append(list, &scenario.Scenario{Name: fmt.Sprint(i)})
	}
	seen := map[string]int{}
	for k := 1; k <= 3; k++ {
		part, err := Shard(list, fmt.Sprintf("%d/3", k))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range part {
			seen[s.Name]++
		}
	}
	if len(seen) != 7 {
		t.Errorf("shards cover %d of 7 scenarios", len(seen))
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("scenario %s is in %d shards", name, n)
		}
	}
	for _, bad := range []string{"0/3", "4/3", "1/0", "a/b", "1/3x", ""} {
		if _, err := Shard(list, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestLostResponseInsideARetryLoop(t *testing.T) {
	srv := newEchoServer(t)
	t.Setenv("ECHO_URL", srv.URL)
	list := load(t, `
name: lost once, then heard
endpoints:
  e:
    http: {url: "${ECHO_URL}/tools/{tool}"}
steps:
  - id: r
    call_tool: issue_refund
    lose_response: true
    retry: {attempts: 3, on: [info], backoff: 1ms}
    verdict: off   # the echo server executes every attempt; this test is about the loop
  - assert: r.ok && r.attempts == 2 && r.result.key == r.key && !r.lost
  - id: gone
    call_tool: issue_refund
    lose_response: true
  - assert: gone.lost && !gone.ok && gone.outcome == "info" && gone.result == nil && gone.headers["Content-Type"] == ""
`)
	rep := Run(context.Background(), list, Options{})
	r := rep.Scenarios[0]
	if r.Status != result.Passed {
		t.Fatalf("status %s: %+v", r.Status, r.Failure)
	}
	if calls := r.Trial1.Calls; len(calls) != 3 || !calls[0].Lost || calls[1].Lost || !calls[2].Lost {
		t.Errorf("history %+v; want the first attempt lost and the second heard", calls)
	}
}

// TestSinglePacketWithoutHTTP2 fails the step, saying why, when the server cannot take the
// copies as HTTP/2 streams, instead of passing a fan-out whose copies never left.
func TestSinglePacketWithoutHTTP2(t *testing.T) {
	srv := newEchoServer(t) // HTTP/1.1 only
	t.Setenv("ECHO_URL", srv.URL)
	list := load(t, `
name: single-packet on HTTP/1
endpoints:
  e:
    http: {url: "${ECHO_URL}/tools/{tool}"}
steps:
  - id: burst
    call_tool: issue_refund
    fanout: 4
    sync: single-packet
  - assert: burst.ok + burst.fail + burst.info == 4
`)
	rep := Run(context.Background(), list, Options{})
	r := rep.Scenarios[0]
	if r.Status != result.Errored || r.Failure == nil || r.Failure.Step != "burst" {
		t.Fatalf("status %s, failure %+v", r.Status, r.Failure)
	}
	if !strings.Contains(r.Failure.Message, "fan-out of 4 not sent: single-packet: the server does not speak HTTP/2") {
		t.Errorf("message %q", r.Failure.Message)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	// The HTTP/2 preface, read as an HTTP/1 "PRI *" request, carries no key: no call arrived.
	for _, k := range srv.keys {
		if k != "" {
			t.Errorf("a call with key %s reached the server", k)
		}
	}
}
