package runner

import (
	"context"
	"errors"
	"testing"
)

// TestInterruptibleWalksAway: a cancelled context ends the wait for an evaluation that has not
// returned (and may never); an evaluation that returns gives its result.
func TestInterruptibleWalksAway(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	go func() { <-started; cancel() }()
	_, err := evaluate(ctx, func() (bool, error) {
		close(started)
		<-release // an expression that runs for hours
		return true, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("evaluate after cancel = %v, want context.Canceled", err)
	}

	v, err := evaluate(context.Background(), func() (int, error) { return 42, nil })
	if v != 42 || err != nil {
		t.Errorf("evaluate = %v, %v; want 42, nil", v, err)
	}
	boom := errors.New("boom")
	if _, err := evaluate(context.Background(), func() (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Errorf("evaluate = %v, want the expression's error", err)
	}
}
