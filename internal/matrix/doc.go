// Package matrix is the model of the matrices idemtest check, sweep and proxy report: a cell's
// Status and the glyph each status is shown by. It imports nothing of ours, so the producers
// (check's battery, sweep, the proxy's verdict) and every reporter share one definition, and no
// package re-exports it.
package matrix
