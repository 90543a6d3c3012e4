// Package matrix is the model of the matrices idemtest check and sweep report: a cell's Status
// and the glyph each status is shown by, the Evidence that decided a cell, and the Matrix view
// (rows of named cells under one column per check or fault) that the terminal and JUnit
// reporters render (the JSON report writes the producers' structs, whose fields are the
// format; HTML and the GitHub annotations show run reports only). It imports nothing of ours,
// so the producers (check's battery, sweep) and the reporters share one definition, and no
// package re-exports it.
//
//	var src matrix.Source = rep // a *check.Report or a *sweep.Report
//	m := src.Matrix()
//	for _, row := range m.Rows {
//		for _, c := range row.Cells {
//			fmt.Println(c.Label, c.Symbol(), c.Reason, c.Evidence) // issue_refund replay ✗ … answers (exactly-once verdict)
//		}
//	}
//
// The proxy's verdict on an agent is no Matrix: it is a list of findings, each about some calls
// of one session, under checks that either held or did not; it has no rows of tools or calls
// crossed with columns, no cell per crossing, no status but pass or fail and no durations. Its
// writers (terminal, JUnit, JSON) render the agentverdict.Verdict itself.
package matrix
