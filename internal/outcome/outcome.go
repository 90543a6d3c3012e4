// Package outcome is the vocabulary the scenario model, the transports and the runner share:
// how a call ended (Outcome) and how a fan-out's copies are released (Sync). It imports
// nothing, so every package can use it; scenario and endpoint re-export the names their users
// write (scenario.OK, endpoint.SyncLastByte).
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

// Sync is how a fan-out's copies are released.
type Sync string

const (
	// SyncBarrier: every copy on its own ready connection, all released by one signal, each
	// then writing its whole request.
	SyncBarrier Sync = "barrier"
	// SyncLastByte: every copy written but its held-back bytes beforehand; the final bytes are
	// then written back to back from one goroutine. The default: it caught more races than
	// barrier in the benchmark (BENCHMARKS.md).
	SyncLastByte Sync = "last-byte"
	// SyncSinglePacket releases HTTP/2 copies with one write: every stream's headers and body
	// are sent beforehand on one connection, and the final (END_STREAM) frames of all streams
	// go out together, so the server reads them from one packet.
	SyncSinglePacket Sync = "single-packet"
)

// Syncs lists the sync modes.
var Syncs = []Sync{SyncBarrier, SyncLastByte, SyncSinglePacket}
