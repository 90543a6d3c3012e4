package runner

import (
	"context"

	"github.com/idemtest/idemtest/internal/ctxwait"
)

// evaluated is the outcome of an expression run by evaluate.
type evaluated[T any] struct {
	v   T
	err error
}

// evaluate runs f where the caller can walk away from it when ctx is done (ctxwait.Run).
// Expressions (assertions, templates) cannot be cancelled, and a heavy one — sum(a.result,
// sum(a.result, #)) over 100,000 elements — must not make Ctrl-C wait for it. A walked-away f
// only reads the environment of a trial that has then ended, which nothing writes any more.
func evaluate[T any](ctx context.Context, f func() (T, error)) (T, error) {
	r, err := ctxwait.Run(ctx, func() evaluated[T] {
		v, err := f()
		return evaluated[T]{v, err}
	})
	if err != nil {
		return r.v, err
	}
	return r.v, r.err
}
