package ctxwait

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRunReturnsTheResult: work that finishes is returned as it is.
func TestRunReturnsTheResult(t *testing.T) {
	if v, err := Run(t.Context(), func() int { return 7 }); v != 7 || err != nil {
		t.Errorf("Run = %d, %v; want 7, nil", v, err)
	}
}

// TestRunWalksAwayWhenCtxEnds: work that never finishes by itself does not hold the caller once
// ctx ends, and work is not started under a context that has ended already.
func TestRunWalksAwayWhenCtxEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		_, err := Run(ctx, func() int { close(started); <-release; return 1 })
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel = %v, want context.Canceled", err)
	}
	ran := false
	if _, err := Run(ctx, func() int { ran = true; return 1 }); !errors.Is(err, context.Canceled) || ran {
		t.Errorf("Run under an ended ctx = %v (ran %v), want context.Canceled without running", err, ran)
	}
}

// TestSleepEndsWithCtx: a sleep far longer than any test is cut short by its context, and a
// sleep that passes reports no error.
func TestSleepEndsWithCtx(t *testing.T) {
	if err := Sleep(t.Context(), time.Nanosecond); err != nil {
		t.Errorf("a sleep that passed = %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("a sleep under an ended ctx = %v, want context.Canceled", err)
	}
}
