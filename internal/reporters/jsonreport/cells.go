package jsonreport

import (
	"io"

	"github.com/idemtest/idemtest/internal/check"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/sweep"
)

// WriteCheck writes the battery as JSON.
func WriteCheck(w io.Writer, rep *check.Report, version string) error {
	return encode(w, struct {
		Kind    string `json:"report"`
		Format  int    `json:"version"`
		Version string `json:"idemtest_version"`
		Failed  bool   `json:"failed"`
		// Shard shadows the report's own: 1/1 when it ran unsharded.
		Shard result.Shard `json:"shard"`
		*check.Report
	}{"check", JSONVersion, version, rep.Failed(), rep.Shard.OrWhole(), rep})
}

// WriteSweep writes a sweep as JSON.
func WriteSweep(w io.Writer, rep *sweep.Report, version string) error {
	return encode(w, struct {
		Kind    string `json:"report"`
		Format  int    `json:"version"`
		Version string `json:"idemtest_version"`
		Failed  bool   `json:"failed"`
		*sweep.Report
	}{"sweep", JSONVersion, version, rep.Failed(), rep})
}
