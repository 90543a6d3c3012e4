// Package explain reads what a check's scenario did, for the cells of idemtest check and sweep:
// the calls of a step, the trial a cell shows, a call's status as a reason cites it, and the
// explanation under a cell that is not ✓ (the runner's failure and the call history).
//
//	tr := explain.Trial(res)
//	lines := explain.Details(res, tr, 12)
package explain
