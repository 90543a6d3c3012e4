package terminal

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/toolset"
)

// ToolsTable prints an endpoint's tools, a row each, with what idemtest makes of each: whether
// it is mutating, where its key goes and whether its schema declares it. The operations of an
// OpenAPI document get a table of their own (operationsTable).
func ToolsTable(w io.Writer, tools []toolset.ToolInfo) error {
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
		fmt.Fprintf(tw, "%s\t%v\t%v\t%s\t%s\t%s\t%v\n", reporters.Clip(reporters.Escape(t.Name), reporters.NameWidth), t.ReadOnly, t.Idempotent, destructive,
			reporters.Escape(t.KeyCarrier), reporters.Escape(accepts), t.Mutating)
	}
	return tw.Flush()
}

// operationsTable lists the operations of an OpenAPI document: how each is called, whether it
// is mutating, where its key goes, and what the document lacks.
func operationsTable(tw *tabwriter.Writer, tools []toolset.ToolInfo) error {
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%v\t%v\t%s\t%s\n", reporters.Clip(reporters.Escape(t.Name), reporters.NameWidth), reporters.Escape(t.Method), reporters.Escape(t.Path),
			t.ReadOnly, t.Idempotent, t.Mutating, reporters.Escape(key), reporters.Escape(note))
	}
	return tw.Flush()
}
