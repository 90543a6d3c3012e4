package battery

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/matrix"
)

// cellCase is one cell of the battery against a server that behaves one way: the status it must
// get, and where it matters what decided it.
type cellCase struct {
	name string
	run  cellRun
	// status is what the cell must be; any, when set, lists every status a timing may give
	// (the in-flight checks judge only a trial whose first call reached the server in time).
	status matrix.Status
	any    []matrix.Status
	// evidence, when set, is exactly what decided the cell; reason is part of why.
	evidence string
	reason   string
	// orElse are the other evidence and reasons a timing may give instead (which of two
	// executions stored its answer last decides whether the answers or the state speak first).
	orElse []proof
}

// proof is what decided a cell and part of why.
type proof struct{ evidence, reason string }

// shows reports whether c was decided by p.
func (p proof) shows(c *Cell) bool {
	return (p.evidence == "" || c.Evidence.String() == p.evidence) && strings.Contains(c.Reason, p.reason)
}

func (tt cellCase) check(t *testing.T) {
	t.Helper()
	c := tt.run.decide(t)
	if c.Check != tt.run.check {
		t.Errorf("cell of %q, want %q", c.Check, tt.run.check)
	}
	ok := c.Status == tt.status
	if len(tt.any) > 0 {
		ok = slices.Contains(tt.any, c.Status)
	}
	shown := proof{tt.evidence, tt.reason}.shows(c)
	for _, p := range tt.orElse {
		shown = shown || p.shows(c)
	}
	if !ok || !shown {
		want := tt.status.Symbol()
		if len(tt.any) > 0 {
			want = ""
			for _, s := range tt.any {
				want += s.Symbol()
			}
		}
		t.Errorf("got %s [%s] %q\nwant %s [%s] %q (or %v)\n%s", c.Status.Symbol(), c.Evidence, c.Reason, want, tt.evidence, tt.reason, tt.orElse, strings.Join(c.Details, "\n"))
	}
}

// stateText is the evidence of a cell the ledger decided, ahead of the answers, as the matrix
// shows it.
const stateText = "state (list_payments)"

// TestCells runs each check against the correct ledger server and against the ones broken in
// the way the check is about: every ✗ (or ⚠) row has the correct server's ✓ next to it.
func TestCells(t *testing.T) {
	correct := ledger{}
	tests := []cellCase{
		{name: "replay: a stored answer is ✓", run: cellRun{check: Replay},
			status: matrix.Pass, evidence: stateText + ", " + answersText, reason: "the retry left list_payments as the first call left it and got the stored answer"},
		{name: "replay: keys ignored is ✗ by the state", run: cellRun{server: ledger{ignoreKeys: true}, check: Replay},
			status: matrix.Fail, evidence: stateText + ", " + answersText, reason: "the retry changed list_payments again; the answers agree: 1 duplicate execution(s)"},
		{name: "replay: 409 for ever is ✗ under ietf", run: cellRun{server: ledger{conflictForever: true}, check: Replay},
			status: matrix.Fail, evidence: statusText, reason: "every retry after the first call completed was refused (status 409"},
		{name: "replay: 409 for ever is ⚠ under lenient", run: cellRun{server: ledger{conflictForever: true}, profile: "lenient", check: Replay},
			status: matrix.Warn, evidence: statusText, reason: "(safe; ✗ under the ietf and stripe profiles)"},
		{name: "lost-response: a stored answer is ✓", run: cellRun{server: correct, check: LostResponse},
			status: matrix.Pass, evidence: stateText + ", " + answersText, reason: "got the stored answer"},
		{name: "lost-response: keys ignored is ✗", run: cellRun{server: ledger{ignoreKeys: true}, check: LostResponse},
			status: matrix.Fail, evidence: stateText + ", " + answersText, reason: "the retry changed list_payments again"},
		{name: "payload-mismatch: 422 is ✓ under ietf", run: cellRun{check: PayloadMismatch},
			status: matrix.Pass, evidence: statusText, reason: "another payload under a used key: rejected (status 422"},
		{name: "payload-mismatch: 400 is ⚠ under ietf", run: cellRun{server: ledger{mismatchStatus: 400}, check: PayloadMismatch},
			status: matrix.Warn, evidence: statusText, reason: "rejected with 400; the ietf profile expects 422 (safe, a protocol deviation)"},
		{name: "payload-mismatch: 400 is ✓ under stripe", run: cellRun{server: ledger{mismatchStatus: 400}, profile: "stripe", check: PayloadMismatch},
			status: matrix.Pass, evidence: statusText, reason: "rejected (status 400"},
		{name: "payload-mismatch: any 4xx is ✓ under lenient", run: cellRun{server: ledger{mismatchStatus: 409}, profile: "lenient", check: PayloadMismatch},
			status: matrix.Pass, evidence: statusText, reason: "another payload under a used key: rejected (status 409"},
		{name: "payload-mismatch: keys ignored is ✗", run: cellRun{server: ledger{ignoreKeys: true}, check: PayloadMismatch},
			status: matrix.Fail, reason: "another payload under a used key executed"},
		{name: "missing-key: 400 is ✓", run: cellRun{check: MissingKey},
			status: matrix.Pass, evidence: statusText, reason: "a call without a key: rejected (status 400"},
		{name: "missing-key: 422 is ⚠ under ietf", run: cellRun{server: ledger{missingStatus: 422}, check: MissingKey},
			status: matrix.Warn, evidence: statusText, reason: "rejected with 422; the ietf profile expects 400"},
		{name: "missing-key: a call without a key executed is ✗", run: cellRun{server: ledger{acceptMissing: true}, check: MissingKey},
			status: matrix.Fail, evidence: statusText, reason: "a call without a key executed (status 200): the server does not require keys"},
		{name: "missing-key: accepted is ✓ under missing_key: accept", run: cellRun{server: ledger{acceptMissing: true}, missingKey: "accept", check: MissingKey},
			status: matrix.Pass, evidence: statusText, reason: "accepted without a key (check.missing_key: accept)"},
		{name: "missing-key: refused after it executed is ✗ by the state", run: cellRun{server: ledger{commitMissing: true}, check: MissingKey},
			status: matrix.Fail, evidence: stateText + ", " + statusText, reason: "a call without a key executed: it changed list_payments, though it was refused (status 400"},
		{name: "missing-key: a tool idempotent by nature is skipped", run: cellRun{tool: "ship", natural: true, check: MissingKey},
			status: matrix.Skip, reason: "idempotent by nature (natural: on the endpoint)"},
		{name: "distinct-keys: two keys, two executions is ✓", run: cellRun{check: DistinctKeys},
			status: matrix.Pass, evidence: answersText, reason: "two keys, two executions"},
		{name: "distinct-keys: a dedupe on the payload is ✗", run: cellRun{server: ledger{dedupePayload: true}, check: DistinctKeys},
			status: matrix.Fail, evidence: answersText, reason: "a new key with the same arguments got a replay: the server dedupes on the payload"},
		{name: "distinct-keys: keys ignored is not judged", run: cellRun{server: ledger{ignoreKeys: true}, check: DistinctKeys},
			status: matrix.Skip, reason: "not judged: keys are not honoured, a same-key retry executed again (replay ✗ the retry changed list_payments again); judged only where keys work"},
		{name: "key-scope: keys per tool is ✓", run: cellRun{check: KeyScope},
			status: matrix.Pass, evidence: answersText, reason: "ship with the same key executed its own call"},
		{name: "key-scope: keys shared between tools is ✗", run: cellRun{server: ledger{sharedKeys: true}, check: KeyScope},
			status: matrix.Fail, reason: "keys are not scoped per tool"},
		{name: "expiry: a key kept is ✓", run: cellRun{check: Expiry},
			status: matrix.Pass, reason: "after 200ms: the retry left list_payments as the first call left it and got the stored answer"},
		{name: "expiry: a key forgotten too soon is ✗", run: cellRun{server: ledger{ttl: 50 * time.Millisecond}, check: Expiry},
			status: matrix.Fail, reason: "after 200ms the key was not remembered: the retry changed list_payments again"},
		{name: "errors-not-replayed: a refusal binds no key", run: cellRun{check: ErrorsNotReplayed},
			status: matrix.Pass, evidence: answersText, reason: "refused without accountId (status 400: client error 400: accountId is required); the corrected call with the same key executed"},
		{name: "errors-not-replayed: a refusal stored under the key is ✗", run: cellRun{server: ledger{cacheErrors: true}, check: ErrorsNotReplayed},
			status: matrix.Fail, evidence: statusText, reason: "the corrected call got the refused call's error again (status 400"},
		{name: "annotations: plain HTTP has none", run: cellRun{check: Annotations},
			status: matrix.Skip, reason: "plain HTTP tools carry no annotations"},
		// Slowed to 100ms a call, the copies of one burst all reach the server while the first
		// works: the naive server is caught in its first round; the correct one's copies are
		// refused with 409, and three rounds leave room for one to overlap on a busy machine.
		{name: "concurrent: one execution, 409 in flight is ✓", run: cellRun{server: ledger{work: 100 * time.Millisecond}, check: Concurrent, opts: rig.Options{Rounds: 3, Budget: time.Second}},
			status: matrix.Pass, evidence: stateText + ", " + answersText, reason: "the state changed as one call changes it, and the answers show one execution per key"},
		{name: "concurrent: a naive store is ✗ in its first round", run: cellRun{server: ledger{work: 100 * time.Millisecond, naive: true}, check: Concurrent},
			status: matrix.Fail, evidence: stateText + ", " + answersText, reason: "round 1 of 1: one burst changed len(list_payments.payments) by +8, as 8 calls do (one call: +1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t)
		})
	}
}

// TestInFlightCells gives up on a call while the server works on it (500ms, well above every
// give-up point the check tries before the budget is spent) and retries: the naive server
// executes the retry too, the correct one answers 409 until the first call is done. A trial
// whose first call had not reached the server when the client gave up judges nothing: the
// correct server's cell is ✓ or ?, never ✗, and the naive one's budget outlasts such trials.
// Of the naive server's two executions the one that stores last is the one a last retry reads:
// its answer differs from the retry's (the answers show it, and the state too when the first
// call had executed before the state was read after it) or equals it (the state shows it).
func TestInFlightCells(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: in-flight trials against a server slowed to 500ms a call, with a 3s budget for the naive one")
	}
	slow := ledger{work: 500 * time.Millisecond}
	naive := ledger{work: 500 * time.Millisecond, naive: true}
	locking := ledger{work: 500 * time.Millisecond, lockReplay: true}
	again := ledger{work: 500 * time.Millisecond, executeAgain: true}
	patient := rig.Options{Budget: 3 * time.Second}
	tests := []cellCase{
		{name: "timeout-retry: 409 while in flight, then the stored answer", run: cellRun{server: slow, check: TimeoutRetry},
			any: []matrix.Status{matrix.Pass, matrix.Inconclusive}},
		{name: "timeout-retry: a naive store executes the retry too", run: cellRun{server: naive, check: TimeoutRetry, opts: patient},
			status: matrix.Fail, evidence: stateText, reason: "the call given up on and its retry both executed: len(list_payments.payments) changed by +2, as 2 calls do (one call: +1)",
			orElse: []proof{{answersText, "a replay differs from the stored answer"},
				{stateText + ", " + answersText, "the retry changed list_payments again; the answers agree: a replay differs from the stored answer"}}},
		// A lock held while the first call works: the retry waits and gets its answer, not
		// marked as a replay. The state or the effects count one execution, and the retry was
		// answered sooner than an execution takes: it got the answer of the call given up on.
		{name: "timeout-retry: an unmarked replay of a call in flight, the state counting", run: cellRun{server: locking, check: TimeoutRetry, opts: patient},
			status: matrix.Pass, evidence: stateText, reason: "list_payments changed as one call does, and the retry was answered "},
		{name: "timeout-retry: an unmarked replay of a call in flight, the effects counting", run: cellRun{server: locking, check: TimeoutRetry, opts: patient, evidence: "effects"},
			status: matrix.Pass, evidence: "effects, answers (exactly-once verdict)", reason: "the declared effects count one execution, and the retry was answered "},
		{name: "timeout-retry: an unmarked replay of a call in flight, nothing counting", run: cellRun{server: locking, check: TimeoutRetry, opts: patient, evidence: "none"},
			status: matrix.Inconclusive, evidence: answersText, reason: "the retry's answer is not marked as a replay, and no evidence counts executions: declare check.tools.pay.effects, a sink, or a check.snapshot read-only call to judge it"},
		{name: "mismatch-in-flight: 409 while in flight", run: cellRun{server: slow, check: MismatchInFlight},
			any: []matrix.Status{matrix.Pass, matrix.Inconclusive}},
		{name: "mismatch-in-flight: a naive store executes both payloads", run: cellRun{server: naive, check: MismatchInFlight, opts: patient},
			status: matrix.Fail, evidence: stateText, reason: "both payloads executed under one key: len(list_payments.payments) changed by +2, as 2 calls do (one call: +1)",
			orElse: []proof{{answersText, "another payload under a key in flight was answered: "}}},
		// The other payload is refused while the first works; the first payload's retry then
		// executes again. The state grew as two calls do, and the message says whose.
		{name: "mismatch-in-flight: the first payload executes twice, the other is refused", run: cellRun{server: again, check: MismatchInFlight, opts: patient},
			status: matrix.Fail, evidence: stateText, reason: "the first payload executed more than once under one key, while another payload was refused (status 409"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t)
		})
	}
}
