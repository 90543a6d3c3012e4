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

// Spread is how the calls to an endpoint with several instances are spread over them
// (DESIGN §11).
type Spread string

const (
	// SpreadRoundRobin: each new key goes to the next instance, and each later call with a key
	// (a fan-out copy, a retry, a retry_of step) to the instance after the one the key last went
	// to, so a retry never lands where its previous attempt did. The default for a set.
	SpreadRoundRobin Spread = "round-robin"
	// SpreadSame: every call goes to the first instance.
	SpreadSame Spread = "same"
	// SpreadRandom: each call goes to an instance drawn from a source seeded with the trial's
	// session, so a run pinned with --session spreads its calls the same way again.
	SpreadRandom Spread = "random"
)

// Spreads lists the spread modes.
var Spreads = []Spread{SpreadRoundRobin, SpreadSame, SpreadRandom}
