package scenariogen

import "time"

// The retry of a call that completed tries again on a refusal (a store that lags behind the
// answer may refuse once), and a refusal on every attempt is for ever. Every refusal counts
// alike, whatever its shape (DESIGN §8): an HTTP 409, an MCP tool error saying "duplicate
// request", a JSON-RPC error and an error-shaped success get as many attempts. check's replay
// and lost-response and sweep's retries all use this one schedule.
const (
	// RefusedAttempts is how many times a retry after completion is sent before a refusal
	// counts as for ever.
	RefusedAttempts = 4
	// RefusedBackoff is the first wait between its attempts; each wait doubles: 50ms, 100ms
	// and 200ms apart.
	RefusedBackoff = 50 * time.Millisecond
)

// RefusedWindow is how long the attempts of AfterCompletion span: 350ms.
func RefusedWindow() time.Duration { return Schedule(RefusedAttempts, RefusedBackoff) }

// Schedule is how long n attempts of a retry loop that first waits backoff span, each wait
// doubling (as the runner waits).
func Schedule(n int, backoff time.Duration) time.Duration {
	var d time.Duration
	for i := range n - 1 {
		d += backoff << i
	}
	return d
}

// AfterCompletion is the retry loop of a retry after its call completed: again on any refusal,
// RefusedAttempts attempts over RefusedWindow.
func AfterCompletion() *Retry {
	return &Retry{Attempts: RefusedAttempts, On: []string{"fail"}, Backoff: RefusedBackoff.String()}
}
