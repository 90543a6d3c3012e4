// Package reporters writes a run's results: to a terminal, as JUnit XML, as JSON, and as GitHub
// Actions annotations. Each writer is pure over a *runner.Report; none re-reads scenario files.
//
//	reporters.Terminal(out, rep, reporters.TerminalOptions{Color: true})
//	reporters.WriteJUnit(f, rep)
//	reporters.WriteJSON(f, rep)
package reporters
