package terminal

import (
	"fmt"
	"io"
	"strings"

	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
)

// WriteProxy prints the proxy's verdict on the agent for a person: a summary line, each
// finding, then FAIL, ERROR (the session failed), "nothing judged" (no mutating call) or PASS.
func WriteProxy(w io.Writer, v agentverdict.Verdict) error {
	var b strings.Builder
	fmt.Fprintf(&b, "idemtest proxy: %s, %d mutating, %d with a fault injected\n", plural.Count(v.Calls, "call"), v.Mutating, v.Faults)
	for _, f := range v.Findings {
		mark := "!"
		if f.Violation {
			mark = "✗"
		}
		fmt.Fprintf(&b, "%s %s\n", mark, f.Message)
	}
	switch {
	case v.Violations > 0:
		fmt.Fprintf(&b, "FAIL: %s by the agent\n", plural.Count(v.Violations, "violation"))
	case v.Error != "":
	case v.Nothing() != "":
		fmt.Fprintf(&b, "nothing judged: %s\n", v.Nothing())
	case v.Faults == 0:
		// Keys were judged, retries were not: say so rather than let PASS imply both.
		b.WriteString("PASS: the agent kept its keys (no fault was injected: no retry was tested)\n")
	default:
		b.WriteString("PASS: the agent kept its keys\n")
	}
	if v.Error != "" {
		fmt.Fprintf(&b, "ERROR: %s\n", v.Error)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
