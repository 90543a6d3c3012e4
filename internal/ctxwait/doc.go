// Package ctxwait is the one home of "give up when ctx ends": Run for work that cannot be
// cancelled itself (an expression over a large value, a decode of many files), which the caller
// walks away from when ctx is done while the work runs on until it returns and its result is
// dropped; Sleep for a pause (a backoff, a sleep step, a poll's tick) that ends early with ctx.
package ctxwait
