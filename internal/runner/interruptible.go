package runner

import "context"

// interruptible runs f where the caller can walk away from it when ctx is done. Expressions
// (assertions, templates) cannot be cancelled, and a heavy one — sum(a.result, sum(a.result,
// #)) over 100,000 elements — must not make Ctrl-C wait for it. A walked-away f runs on until
// it returns and its result is dropped; it only reads the environment of a trial that has then
// ended, which nothing writes any more.
func interruptible[T any](ctx context.Context, f func() T) (T, error) {
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

// evaluated is the outcome of an expression run by interruptible.
type evaluated[T any] struct {
	v   T
	err error
}

func evaluate[T any](ctx context.Context, f func() (T, error)) (T, error) {
	r, err := interruptible(ctx, func() evaluated[T] {
		v, err := f()
		return evaluated[T]{v, err}
	})
	if err != nil {
		return r.v, err
	}
	return r.v, r.err
}
