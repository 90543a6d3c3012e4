package testenv

import (
	"testing"
	"time"
)

// TestUntil: a condition that comes true ends the wait with true; one that never does ends it,
// after the timeout, with false.
func TestUntil(t *testing.T) {
	n := 0
	if !Until(time.Minute, func() bool { n++; return n == 3 }) {
		t.Error("a condition that held on its third look reads as never holding")
	}
	if n != 3 {
		t.Errorf("cond looked at %d times, want 3", n)
	}
	if Until(time.Millisecond, func() bool { return false }) {
		t.Error("a condition that never held reads as holding")
	}
}
