package jsonreport

import (
	"io"

	"github.com/idemtest/idemtest/internal/endpoints"
)

// WriteTools writes an endpoint's tools as idemtest tools --json prints them: every name whole,
// escaped inside its string so that it cannot drive a terminal.
func WriteTools(w io.Writer, tools []endpoints.ToolInfo) error {
	if tools == nil {
		tools = []endpoints.ToolInfo{}
	}
	return encode(w, tools)
}
