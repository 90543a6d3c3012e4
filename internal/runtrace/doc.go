// Package runtrace writes a run as a trace (run --trace, DESIGN §10): every call of every trial,
// tagged with its scenario, trial, step and endpoint, in the format sweep and the proxy share.
//
//	tr, err := runtrace.New(f, scenarios)
//	opts.OnEvent = tr.Event // runner.Options
//	...
//	err = tr.Err()
package runtrace
