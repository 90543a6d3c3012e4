package reporters

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/idemtest/idemtest/internal/runner"
)

// WriteToolsJSON writes an endpoint's tools as idemtest tools --json prints them: every name
// whole, escaped so that it cannot drive a terminal.
func WriteToolsJSON(w io.Writer, tools []runner.ToolInfo) error {
	b, err := json.MarshalIndent(tools, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", EscapeJSON(b))
	return err
}

// ToolsTable prints an endpoint's tools, a row each, with what idemtest makes of each: whether
// it is mutating, where its key goes and whether its schema declares it. The operations of an
// OpenAPI document get a table of their own (operationsTable).
func ToolsTable(w io.Writer, tools []runner.ToolInfo) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(tools) > 0 && tools[0].Method != "" {
		return operationsTable(tw, tools)
	}
	fmt.Fprintln(tw, "TOOL\tREAD-ONLY\tIDEMPOTENT\tDESTRUCTIVE\tKEY\tSCHEMA HAS KEY\tMUTATING")
	for _, t := range tools {
		destructive := "-"
		if t.Destructive != nil {
			destructive = fmt.Sprint(*t.Destructive)
		}
		accepts := t.AcceptsKey
		if accepts == "" {
			accepts = "-"
		}
		// Tool names come from the server: escaped so that they cannot drive the terminal or forge
		// a CI log line, and clipped so that one long name keeps the columns on screen (--json
		// has them whole).
		fmt.Fprintf(tw, "%s\t%v\t%v\t%s\t%s\t%s\t%v\n", Clip(Escape(t.Name), NameWidth), t.ReadOnly, t.Idempotent, destructive,
			Escape(t.KeyCarrier), Escape(accepts), t.Mutating)
	}
	return tw.Flush()
}

// operationsTable lists the operations of an OpenAPI document: how each is called, whether it
// is mutating, where its key goes, and what the document lacks.
func operationsTable(tw *tabwriter.Writer, tools []runner.ToolInfo) error {
	fmt.Fprintln(tw, "TOOL\tMETHOD\tPATH\tREAD-ONLY\tIDEMPOTENT\tMUTATING\tKEY\tNOTE")
	for _, t := range tools {
		key, note := "-", "-"
		if t.Mutating {
			key = t.KeyCarrier
		}
		if t.Finding != "" {
			note = t.Finding
		}
		// Everything here comes from the document: escaped so that it cannot drive the terminal.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%v\t%v\t%s\t%s\n", Clip(Escape(t.Name), NameWidth), Escape(t.Method), Escape(t.Path),
			t.ReadOnly, t.Idempotent, t.Mutating, Escape(key), Escape(note))
	}
	return tw.Flush()
}
