package battery

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/matrix"
)

// TestConcurrentStopsAtFirstCatch: a naive store whose answers carry no id executes every copy
// of a burst, which only the declared effects count. The check stops at the round that showed
// it, not at the end of its rounds (each round is more rows in the user's database); the
// correct store's rounds, where the effects count one execution, earn ✓ from them.
func TestConcurrentStopsAtFirstCatch(t *testing.T) {
	const cap = 30
	tests := []struct {
		name   string
		server ledger
		status matrix.Status
		reason string
	}{
		{"a naive store, caught by the effects", ledger{work: 100 * time.Millisecond, naive: true, bare: true}, matrix.Fail, "the declared effects counted another number of executions than 1"},
		{"a correct store, one execution counted", ledger{work: 100 * time.Millisecond, bare: true}, matrix.Pass, "one execution per key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := rig.Options{Rounds: cap, Budget: time.Minute}
			if tt.status == matrix.Pass {
				opts = rig.Options{Rounds: 3, Budget: time.Second}
			}
			c := cellRun{server: tt.server, check: Concurrent, evidence: "effects", opts: opts}.decide(t)
			if c.Status != tt.status || !c.Evidence.Leads(matrix.EvidenceEffects) || !strings.Contains(c.Reason, tt.reason) {
				t.Fatalf("got %s [%s] %q, want %s [effects, …] %q\n%s", c.Status.Symbol(), c.Evidence, c.Reason, tt.status.Symbol(), tt.reason, strings.Join(c.Details, "\n"))
			}
			if tt.status != matrix.Fail {
				return
			}
			if c.Rounds >= cap || !strings.HasPrefix(c.Reason, fmt.Sprintf("round %d of %d: ", c.Rounds, cap)) {
				t.Errorf("the check went on after the round that caught it: %d rounds, %q", c.Rounds, c.Reason)
			}
		})
	}
}

// TestFailCellsShowCalls: a ✗ cell carries the session and keys of the trial that decided it
// and lists its calls, whatever decided it: the answers and the state, the declared effects
// after the answers passed it (a server that executes the retry, then answers the stored
// answer marked as a replay), or a concurrent round caught by the effects alone.
func TestFailCellsShowCalls(t *testing.T) {
	tests := []struct {
		name string
		run  cellRun
		lead matrix.EvidenceKind
	}{
		{"replay, by the state and the answers", cellRun{server: ledger{ignoreKeys: true}, check: Replay}, matrix.EvidenceState},
		{"replay, by the effects alone", cellRun{server: ledger{markAgain: true}, check: Replay, evidence: "effects"}, matrix.EvidenceEffects},
		{"lost-response, by the effects alone", cellRun{server: ledger{markAgain: true}, check: LostResponse, evidence: "effects"}, matrix.EvidenceEffects},
		{"concurrent, by the effects alone", cellRun{server: ledger{work: 100 * time.Millisecond, naive: true, bare: true}, check: Concurrent, evidence: "effects", opts: rig.Options{Rounds: 5, Budget: time.Minute}}, matrix.EvidenceEffects},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.run.decide(t)
			if c.Status != matrix.Fail || !c.Evidence.Leads(tt.lead) {
				t.Fatalf("got %s [%s] %q, want ✗ led by %s", c.Status.Symbol(), c.Evidence, c.Reason, tt.lead)
			}
			if c.Session == "" || len(c.Keys) == 0 {
				t.Fatalf("session %q, keys %v: a ✗ cell names both", c.Session, c.Keys)
			}
			at := slices.Index(c.Details, "calls (session "+c.Session+"):")
			if at < 0 {
				t.Fatalf("no call history of session %s under the cell:\n%s", c.Session, strings.Join(c.Details, "\n"))
			}
			for _, k := range c.Keys {
				if !slices.ContainsFunc(c.Details[at:], func(l string) bool { return strings.Contains(l, k) }) {
					t.Errorf("key %s is on no call line:\n%s", k, strings.Join(c.Details, "\n"))
				}
			}
			// The JSON report carries them, as a consumer parses it.
			raw, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Session string   `json:"session"`
				Keys    []string `json:"keys"`
			}
			if err := json.Unmarshal(raw, &got); err != nil || got.Session != c.Session || !slices.Equal(got.Keys, c.Keys) {
				t.Errorf("JSON session %q keys %v (%v), want %q %v", got.Session, got.Keys, err, c.Session, c.Keys)
			}
		})
	}
}

// TestSinkHeardFewer: a server whose webhook batches (it posts on every other execution) runs
// one execution per key in the concurrent round, yet the sink hears none of it: the cell says
// the sink heard fewer requests than one execution sends, never that it heard another
// execution; a server that posts on every execution is ✓ by the sink.
func TestSinkHeardFewer(t *testing.T) {
	tests := []struct {
		name   string
		server ledger
		status matrix.Status
		reason string
	}{
		{"a batching webhook", ledger{work: 100 * time.Millisecond, hookEvery: 2}, matrix.Fail, "round 1 of 3: the sinks heard fewer requests than 1 execution(s) send: sink hook received 0 requests; 1 execution(s) send 1"},
		{"a webhook per execution", ledger{work: 100 * time.Millisecond, hookEvery: 1}, matrix.Pass, "one execution per key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cellRun{server: tt.server, check: Concurrent, evidence: "sink", opts: rig.Options{Rounds: 3, Budget: time.Second}}.decide(t)
			if c.Status != tt.status || !strings.Contains(c.Reason, tt.reason) || strings.Contains(c.Reason, "another execution") {
				t.Errorf("got %s [%s] %q\nwant %s %q\n%s", c.Status.Symbol(), c.Evidence, c.Reason, tt.status.Symbol(), tt.reason, strings.Join(c.Details, "\n"))
			}
		})
	}
}
