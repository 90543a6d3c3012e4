// Package stateview owns the state evidence of the battery (DESIGN §9): the answers of read-only
// tools without required arguments, or of configured snapshot calls, read before and after a
// check's calls. It adds those reads to a check's steps (and the assertions a saved scenario
// keeps), and compares them: a retry must leave the state as the first call left it, a burst
// must change it as one call does (Delta), and an answer that mints a new id-like value is
// evidence of another execution that an unchanged view cannot disprove (Minted).
//
//	snap := stateview.Snapshots{Tools: stateview.SnapshotTools(tools), Ignore: def.Ignore}
//	steps := snap.WithState(first, retry)    // reads around a call and its retry
//	moved, changed := snap.Compare(trial)     // what the first call changed, what the retry changed again
package stateview
