package jsonreport

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/idemtest/idemtest/internal/endpoints"
	"github.com/idemtest/idemtest/internal/reporters"
)

// WriteTools writes an endpoint's tools as idemtest tools --json prints them: every name
// whole, escaped so that it cannot drive a terminal.
func WriteTools(w io.Writer, tools []endpoints.ToolInfo) error {
	b, err := json.MarshalIndent(tools, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", reporters.EscapeJSON(b))
	return err
}
