package jsonreport

import (
	"io"

	"github.com/idemtest/idemtest/internal/toolset"
)

// WriteTools writes an endpoint's tools as idemtest tools --json prints them: every name whole,
// escaped inside its string so that it cannot drive a terminal.
func WriteTools(w io.Writer, tools []toolset.ToolInfo) error {
	if tools == nil {
		tools = []toolset.ToolInfo{}
	}
	return encode(w, tools)
}
