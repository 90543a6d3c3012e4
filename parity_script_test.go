//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdMatrix prints check's matrix from its JSON report as a consumer of the report reads it, one
// line per cell: "TOOL CHECK STATUS [EVIDENCE KINDS] REASON", where the reason leaves out every
// parenthesised part (the transport's own words: "status 409: …", "tool error: …") and the
// session ids: "matrix [-brief] REPORT" (-brief: no reason). Two transports that judge alike
// print the same lines, however each words a refusal.
func cmdMatrix(ts *testscript.TestScript, neg bool, args []string) {
	brief := len(args) > 0 && args[0] == "-brief"
	if brief {
		args = args[1:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: matrix [-brief] REPORT.json")
	}
	var rep struct {
		Tools []struct {
			Tool  string `json:"tool"`
			Cells []struct {
				Check    string `json:"check"`
				Status   string `json:"status"`
				Reason   string `json:"reason"`
				Evidence []struct {
					Kind string `json:"kind"`
				} `json:"evidence_items"`
			} `json:"cells"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &rep); err != nil {
		ts.Fatalf("matrix %s: %v", args[0], err)
	}
	if len(rep.Tools) == 0 {
		ts.Fatalf("matrix %s: no tools", args[0])
	}
	for _, row := range rep.Tools {
		for _, c := range row.Cells {
			var kinds []string
			for _, e := range c.Evidence {
				kinds = append(kinds, e.Kind)
			}
			line := fmt.Sprintf("%s %s %s [%s]", row.Tool, c.Check, c.Status, strings.Join(kinds, ","))
			if !brief {
				line += " " + withoutParens(c.Reason)
			}
			fmt.Fprintln(ts.Stdout(), line)
		}
	}
}

// sessionID is a session, a key's session part or an id a server made up.
var sessionID = regexp.MustCompile(`[0-9a-f]{12,}`)

// withoutParens leaves out of s every parenthesised part, nested ones included.
func withoutParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	out = strings.NewReplacer(" :", ":", " ;", ";", " ,", ",").Replace(out)
	return sessionID.ReplaceAllString(out, "ID")
}

// cmdSweepMatrix prints sweep's cells from its JSON report as a consumer of the report reads it,
// run 0 first, one line per cell: "SEQ TOOL FAULT STATUS REASON", the reason without its
// parenthesised parts (the transport's own words) and session ids: "sweepmatrix REPORT". Two
// transports that judge alike print the same lines.
func cmdSweepMatrix(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sweepmatrix REPORT.json")
	}
	type cell struct {
		Seq    int    `json:"seq"`
		Tool   string `json:"tool"`
		Fault  string `json:"fault"`
		Status string `json:"status"`
		Reason string `json:"reason"`
	}
	var rep struct {
		Baseline *cell  `json:"baseline"`
		Cells    []cell `json:"cells"`
	}
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &rep); err != nil {
		ts.Fatalf("sweepmatrix %s: %v", args[0], err)
	}
	if rep.Baseline == nil || len(rep.Cells) == 0 {
		ts.Fatalf("sweepmatrix %s: no run 0 or no cells", args[0])
	}
	for _, c := range append([]cell{*rep.Baseline}, rep.Cells...) {
		fmt.Fprintf(ts.Stdout(), "%d %s %s %s %s\n", c.Seq, c.Tool, c.Fault, c.Status, withoutParens(c.Reason))
	}
}
