// Package terminal writes the reports a person reads in a terminal: a run's results (a line per
// scenario, each failure with its call history, the summary), the live progress line, check's
// matrix, sweep's table and the proxy's verdict on the agent. Its styles are built from a
// lipgloss renderer bound to the writer (style.go); without colour every line is plain and
// stable.
//
//	terminal.Write(out, rep, terminal.Options{Color: true})
//	p := terminal.NewProgress(errOut, len(scenarios), live, false, color)
//	terminal.WriteMatrix(out, battery.Matrix(), color)
package terminal
