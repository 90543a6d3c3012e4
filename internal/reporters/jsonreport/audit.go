package jsonreport

import (
	"io"

	"github.com/idemtest/idemtest/internal/audit"
	"github.com/idemtest/idemtest/internal/baseline"
)

// WriteAudit writes the audit of production traces as JSON, in the reports' envelope, with its
// violations classified against --baseline when regs is not nil.
func WriteAudit(w io.Writer, rep *audit.Report, regs *baseline.Result, version string) error {
	return encode(w, struct {
		Kind    string `json:"report"`
		Format  int    `json:"version"`
		Version string `json:"idemtest_version"`
		Failed  bool   `json:"failed"`
		*audit.Report
		Regressions *baseline.Result `json:"regressions,omitempty"`
	}{"audit", JSONVersion, version, rep.Failed(), rep, regs})
}
