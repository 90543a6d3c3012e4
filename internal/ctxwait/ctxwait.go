package ctxwait

import (
	"context"
	"time"
)

// Run runs f and returns what it returns, or ctx's error as soon as ctx is done (at once, f not
// started, when ctx is done already). A walked-away f runs on in its own goroutine until it
// returns: it must be bounded (in size or time) and must not write anything the caller reads
// after Run returns.
func Run[T any](ctx context.Context, f func() T) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Sleep waits for d to pass or ctx to be done, whichever comes first, and returns ctx's error
// when ctx ended the wait.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
