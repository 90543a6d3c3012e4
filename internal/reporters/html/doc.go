// Package html writes a run as one self-contained HTML page (html.tmpl): totals, a section per
// scenario, each failure with the verdict's answers side by side, and a trial's calls drawn as
// a timeline, a fan-out's copies as a waterfall.
//
//	err := html.Write(f, rep, version)
package html
