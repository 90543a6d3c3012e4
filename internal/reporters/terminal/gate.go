package terminal

import (
	"fmt"
	"io"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/result"
)

// Gate writes what the CI gate adds to a report (DESIGN §12): the failures against the
// baseline in three groups, new first, then a summary line; and each endpoint's mutating tools
// nothing tested, and those exempted with their reasons. Nothing without a baseline or
// coverage.
func Gate(w io.Writer, res *baseline.Result, cov []result.Coverage, color bool) {
	st := newStyles(w, color)
	if res != nil {
		fmt.Fprintln(w)
		for _, g := range []struct {
			name  string
			style func(...string) string
			list  []baseline.Failure
		}{
			{"new (not in the baseline: these fail the gate)", st.fail.Render, res.New},
			{"known (in the baseline)", st.skip.Render, res.Known},
			{"fixed (in the baseline, passing now)", st.pass.Render, res.Fixed},
		} {
			if len(g.list) == 0 {
				continue
			}
			fmt.Fprintf(w, "%s %d %s\n", g.style("Baseline"), len(g.list), g.name)
			for _, f := range g.list {
				fmt.Fprintf(w, "  %s\n", reporters.Escape(f.String()))
			}
		}
		line := res.Line()
		if res.FailOn == baseline.FailOnAny {
			line += " (--fail-on any: every failure fails the gate)"
		}
		fmt.Fprintln(w, st.bold.Render(line))
	}
	for _, c := range cov {
		switch {
		case c.Error != "":
			fmt.Fprintf(w, "Coverage: endpoint %s: its tools could not be listed: %s\n", reporters.Escape(c.Endpoint), reporters.Escape(c.Error))
		case len(c.Uncovered) > 0:
			fmt.Fprintf(w, "Coverage: endpoint %s: %d of %d mutating tools not tested:\n", reporters.Escape(c.Endpoint), len(c.Uncovered), c.Mutating)
			for _, u := range c.Uncovered {
				if u.Reason != "" {
					fmt.Fprintf(w, "  %s — %s\n", reporters.Escape(u.Tool), reporters.Escape(u.Reason))
				} else {
					fmt.Fprintf(w, "  %s\n", reporters.Escape(u.Tool))
				}
			}
		}
		for _, e := range c.Exempt {
			fmt.Fprintf(w, "Coverage: endpoint %s: %s exempt: %s\n", reporters.Escape(c.Endpoint), reporters.Escape(e.Tool), reporters.Escape(e.Reason))
		}
	}
}
