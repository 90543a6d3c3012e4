package runner

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/idemtest/idemtest/internal/result"
)

// keyedServer is a tiny HTTP tool server whose tools behave as idempotency libraries do, well
// and badly:
//
//	stored   replays the stored bytes of a key's first answer, without Idempotent-Replayed
//	fresh    executes every call: a new refund id each time
//	marked   executes every call, and marks the later ones as replays
//	stamped  replays the stored refund, with a new requestId in every answer
func keyedServer(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	n := 0
	stored := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		n++
		tool := strings.TrimPrefix(r.URL.Path, "/tools/")
		key := tool + " " + r.Header.Get("Idempotency-Key")
		first, seen := stored[key]
		if !seen {
			first = fmt.Appendf(nil, `{"refundId":"re_%d","amount":10}`, n)
			stored[key] = first
		}
		w.Header().Set("Content-Type", "application/json")
		switch tool {
		case "stored":
			w.Write(first)
		case "fresh":
			fmt.Fprintf(w, `{"refundId":"re_%d","amount":10}`, n)
		case "marked":
			if seen {
				w.Header().Set("Idempotent-Replayed", "true")
			}
			fmt.Fprintf(w, `{"refundId":"re_%d","amount":10}`, n)
		case "stamped":
			fmt.Fprintf(w, `{"refund":%s,"meta":{"requestId":"req_%d"}}`, first, n)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestVerdict runs one call, a lost response with its retry and a 4-way burst against each
// behaviour, with no assertion at all: the verdict alone decides.
func TestVerdict(t *testing.T) {
	srv := keyedServer(t)
	t.Setenv("ECHO_URL", srv.URL)
	tests := []struct {
		name     string
		tool     string
		endpoint string // more endpoint settings
		step     string // more settings of every call step
		// want is the failure message, "" for a pass.
		want     string
		replayed int // of 4 repeats of a key in one trial: 1 retry, 3 burst copies
		dups     int
	}{
		{name: "unmarked byte-for-byte replays", tool: "stored", replayed: 4},
		{name: "an execution per call", tool: "fresh", want: "key s-1 executed 2 times (fresh)", dups: 1 + 3},
		{name: "a marked replay with a new id", tool: "marked", want: "key s-1: a replay differs from the first answer (marked)", replayed: 4},
		{name: "a request id per answer, not ignored", tool: "stamped", want: "key s-1 executed 2 times (stamped)", dups: 1 + 3},
		{name: "a request id per answer, ignored", tool: "stamped", endpoint: "compare: {ignore: [meta.requestId]}", replayed: 4},
		{name: "a tool idempotent by nature", tool: "fresh", endpoint: "natural: [fresh]"},
		{name: "another tool idempotent by nature", tool: "fresh", endpoint: "natural: [stored]", want: "key s-1 executed 2 times (fresh)", dups: 4},
		{name: "verdict: off", tool: "fresh", step: "verdict: off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := load(t, fmt.Sprintf(`
name: verdict only
endpoints:
  e:
    http: {url: "${ECHO_URL}/tools/{tool}"}
    %s
steps:
  - {id: once, call_tool: %[2]s, %[3]s}
  - {id: first, call_tool: %[2]s, lose_response: true, %[3]s}
  - {id: retry, retry_of: first, %[3]s}
  - {id: burst, call_tool: %[2]s, fanout: 4, %[3]s}
`, tt.endpoint, tt.tool, tt.step))
			rep := Run(context.Background(), list, Options{Session: "s"})
			r := rep.Scenarios[0]
			switch {
			case tt.want == "" && r.Status != result.Passed:
				t.Fatalf("status %s: %+v", r.Status, r.Failure)
			case tt.want != "" && (r.Status != result.Failed || r.Failure.Kind != "verdict" || !strings.HasPrefix(r.Failure.Message, tt.want+" — ")):
				t.Fatalf("status %s, failure %+v; want the verdict %q", r.Status, r.Failure, tt.want)
			}
			if tt.want != "" {
				if r.Failure.Step != "first" || r.Failure.Pos.Line != 9 || !rep.Failed() {
					t.Errorf("failure at step %s, %s; want step first, line 9", r.Failure.Step, r.Failure.Pos)
				}
				// The answers side by side, and the further violations.
				text := strings.Join(r.Failure.Explanation, "\n")
				// Each violation leads with the verdict and the likely cause: the lost answer's retry
				// found no stored answer, the burst's copies raced past the check.
				wants := []string{"first (lost)  {", "retry         {", "burst copy",
					"key s-2 executed 4 times (" + tt.tool + ") — the server's check-and-store is not atomic: reserve the key"}
				if tt.tool != "marked" && !strings.Contains(r.Failure.Message, "the server did not find the key when the call came again") {
					t.Errorf("message without the cause of a retry executed again: %s", r.Failure.Message)
				}
				if tt.tool == "marked" {
					wants = []string{"first answer: first (lost)  {", "marked replay: retry        {", "step burst: key s-2: 3 replays differ",
						"— the server builds the answer again on replay"}
				}
				for _, want := range wants {
					if !strings.Contains(text, want) {
						t.Errorf("explanation lacks %q:\n%s", want, text)
					}
				}
			}
			// The burst's copies are concurrent duplicates, not retries.
			if m := r.Metrics; m.Retries != 1 || m.Copies != 3 || m.Repeats() != 4 || m.Replayed != tt.replayed || m.DuplicateExecutions != tt.dups {
				t.Errorf("retries %d, copies %d, replayed %d, duplicates %d; want 1, 3, %d, %d", m.Retries, m.Copies, m.Replayed, m.DuplicateExecutions, tt.replayed, tt.dups)
			}
		})
	}
}

// TestVerdictBesideAFailedAssertion: a trial that already failed still shows the verdict.
func TestVerdictBesideAFailedAssertion(t *testing.T) {
	srv := keyedServer(t)
	t.Setenv("ECHO_URL", srv.URL)
	list := load(t, `
name: both
endpoints:
  e:
    http: {url: "${ECHO_URL}/tools/{tool}"}
steps:
  - {id: a, call_tool: fresh}
  - {id: b, retry_of: a}
  - assert: b.replayed
`)
	rep := Run(context.Background(), list, Options{Session: "s"})
	f := rep.Scenarios[0].Failure
	if f == nil || f.Kind != "assert" {
		t.Fatalf("failure %+v, want the assertion's", f)
	}
	text := strings.Join(f.Explanation, "\n")
	if !strings.Contains(text, "the exactly-once verdict also failed:") || !strings.Contains(text, "step a: key s-0 executed 2 times (fresh)") {
		t.Errorf("explanation:\n%s", text)
	}
	// The verdict in words, for reports to lead with.
	if len(f.Verdict) != 1 || !strings.HasPrefix(f.Verdict[0], "key s-0 executed 2 times (fresh) — the server did not find the key") {
		t.Errorf("verdict %q", f.Verdict)
	}
	if rep.Scenarios[0].Metrics.DuplicateExecutions != 1 {
		t.Errorf("duplicates %d, want 1", rep.Scenarios[0].Metrics.DuplicateExecutions)
	}
}
