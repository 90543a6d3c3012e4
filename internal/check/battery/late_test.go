package battery

import (
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/result"
)

// TestLateForFlight: a call sent half the shortest execution or more after the call given up on
// may meet that call finished at the server, so its trial cannot show the call in flight; one
// sent sooner can. Times are the calls' own stamps (Sent, else Start), never the clock's.
func TestLateForFlight(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first := result.Call{Start: t0.Add(-time.Millisecond), Sent: t0}
	at := func(d time.Duration) result.Call {
		return result.Call{Start: t0.Add(d - time.Millisecond), Sent: t0.Add(d)}
	}
	tests := []struct {
		name  string
		fresh time.Duration
		call  result.Call
		late  bool
	}{
		{"well inside the execution", 500 * time.Millisecond, at(60 * time.Millisecond), false},
		{"just before half", 500 * time.Millisecond, at(249 * time.Millisecond), false},
		{"at half", 500 * time.Millisecond, at(250 * time.Millisecond), true},
		{"past the execution", 500 * time.Millisecond, at(512 * time.Millisecond), true},
		{"no Sent stamp: Start counts", 500 * time.Millisecond, result.Call{Start: t0.Add(300 * time.Millisecond)}, true},
		{"no execution measured: never late", 0, at(time.Hour), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Battery{fresh: tt.fresh}
			if _, late := b.lateForFlight(first, tt.call); late != tt.late {
				t.Errorf("lateForFlight = %v, want %v", late, tt.late)
			}
		})
	}
}
