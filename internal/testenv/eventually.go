package testenv

import (
	"testing"
	"time"
)

// tick is how often Until and Eventually look at their condition.
const tick = 5 * time.Millisecond

// Until polls cond every few milliseconds and reports whether it held before timeout passed.
// The timeout only bounds a hang: a busy machine makes the wait longer, never the outcome
// different, so give it a generous one (a minute) rather than the time the event "should" take.
// Use it where the caller fails in its own words or cleans up first; Eventually otherwise.
func Until(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(tick)
	}
	return true
}

// Eventually polls cond until it holds, and fails t when timeout passes first, saying it gave up
// waiting until what. Call it from the test's goroutine (it calls t.Fatalf).
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	if !Until(timeout, cond) {
		t.Fatalf("gave up after %s waiting until %s", timeout, what)
	}
}
