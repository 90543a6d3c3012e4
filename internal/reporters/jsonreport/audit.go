package jsonreport

import (
	"io"

	"github.com/idemtest/idemtest/internal/audit"
)

// WriteAudit writes the audit of production traces as JSON, in the reports' envelope.
func WriteAudit(w io.Writer, rep *audit.Report, version string) error {
	return encode(w, struct {
		Kind    string `json:"report"`
		Format  int    `json:"version"`
		Version string `json:"idemtest_version"`
		Failed  bool   `json:"failed"`
		*audit.Report
	}{"audit", JSONVersion, version, rep.Failed(), rep})
}
