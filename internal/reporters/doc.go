// Package reporters writes a run's results: to a terminal, as JUnit XML (valid against the
// xUnit schema Jenkins checks), as JSON (format version 1, read back by ReadJSON), as an HTML
// page, as a GitHub job summary and as GitHub Actions annotations. Each writer is pure over a
// *runner.Report; none re-reads scenario files.
//
//	reporters.Terminal(out, rep, reporters.TerminalOptions{Color: true})
//	reporters.WriteJUnit(f, rep)
//	reporters.WriteJSON(f, rep, version)
//	reporters.GitHub(out, rep, os.Getenv("GITHUB_WORKSPACE"))
//	rep, err := reporters.ReadJSON(f) // a recorded report, rendered again
package reporters
