// Package dispatch is how copies of a call are sent: how a fan-out's copies are released
// together (Sync) and how the calls to an endpoint of several instances are spread over them
// (Spread). The scenario model decodes these names, the transports release by Sync and the
// runner spreads by Spread; it imports nothing, and no package re-exports it.
package dispatch

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
