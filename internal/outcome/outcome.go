// Package outcome is how a call ended (Outcome), in the one word the scenario model, the
// transports, the runner, the verdict and the traces share. It imports nothing, so every
// package can use it, and no package re-exports it: a call's outcome is outcome.OK everywhere.
package outcome

// Outcome is a call's outcome in Jepsen's sense (DESIGN §2).
type Outcome string

const (
	// OK: the call definitely happened.
	OK Outcome = "ok"
	// Fail: the call definitely did not happen (4xx, refused before sending).
	Fail Outcome = "fail"
	// Info: indeterminate (5xx, timeout, connection lost after sending, response discarded).
	Info Outcome = "info"
	// Any is what a step may expect when every outcome is acceptable; no call ends with it.
	Any Outcome = "any"
)
