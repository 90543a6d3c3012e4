// Package reporters holds what every report of idemtest shares: the one escaping of text that
// came from outside (Escape, EscapeText; JSON is escaped by safejson as it is encoded), the clipping of long names in tables, and
// the wording of a run (a trial's call history, a failure explained, the summary line). Each
// output format is a package of its own below it, pure over the results it is given; none
// re-reads scenario files:
//
//	terminal    the human report, the live progress line, check's and sweep's matrices, the
//	            proxy's verdict
//	junit       JUnit XML, valid against the xUnit schema Jenkins checks (run, check, sweep, proxy)
//	jsonreport  JSON (the run's format version 1, read back by jsonreport.Read; check, sweep, proxy)
//	html        a self-contained HTML page of a run
//	github      GitHub Actions annotations and the job summary
//
// A new output format is a new package here plus its flag in cmd.
//
//	fmt.Fprintln(out, reporters.Escape(serverText))
//	terminal.Write(out, rep, terminal.Options{Color: true})
//	junit.Write(f, rep)
package reporters
