package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/result"
)

// GateOptions are the CI gate flags run, check and sweep share (DESIGN §12): a baseline of
// known failures, and whether every mutating tool must have been judged.
type GateOptions struct {
	Baseline        string
	FailOn          string
	UpdateBaseline  bool
	RequireCoverage bool
	// Coverage reports the untested mutating tools without failing on them (run and check).
	Coverage bool
	// base is the baseline read before anything was sent (nil: none, or --update-baseline
	// creating it).
	base *baseline.Report
}

// gateFlags defines the gate flags; coverage, when not empty, is the help of --coverage (what
// the command lists), and adds --coverage and --require-coverage.
func (g *GateOptions) gateFlags(c *cobra.Command, coverage string) {
	fl := c.Flags()
	fl.StringVar(&g.Baseline, "baseline", "", "compare with this committed `FILE` (the --json report of the same command): only new failures fail the gate")
	fl.StringVar(&g.FailOn, "fail-on", "", "with --baseline: `new` (the default: fail on failures the baseline does not list) or any (fail on any failure)")
	_ = c.RegisterFlagCompletionFunc("fail-on", completeValues([]string{baseline.FailOnNew, baseline.FailOnAny}, false))
	fl.BoolVar(&g.UpdateBaseline, "update-baseline", false, "write the current JSON report to the --baseline file (the gate's verdict is unchanged)")
	if coverage != "" {
		fl.BoolVar(&g.Coverage, "coverage", false, coverage)
		fl.BoolVar(&g.RequireCoverage, "require-coverage", false, "fail when a mutating tool of an endpoint was not tested (coverage.exempt in idemtest.yaml lists exceptions, with reasons)")
	}
}

// loadBaseline checks the gate flags and reads the baseline, before anything is sent: a
// baseline that is not a report of kind, or of another format version, is bad input.
func (g *GateOptions) loadBaseline(kind baseline.Kind) error {
	switch g.FailOn {
	case "":
		g.FailOn = baseline.FailOnNew
		if g.Baseline == "" {
			g.FailOn = baseline.FailOnAny
		}
	case baseline.FailOnNew:
		if g.Baseline == "" {
			return &exitError{ExitUsage, errors.New("--fail-on new needs --baseline FILE: the failures it knows")}
		}
	case baseline.FailOnAny:
	default:
		return &exitError{ExitUsage, fmt.Errorf("--fail-on %q: use new or any", g.FailOn)}
	}
	if g.Baseline == "" {
		if g.UpdateBaseline {
			return &exitError{ExitUsage, errors.New("--update-baseline needs --baseline FILE: the file to write")}
		}
		return nil
	}
	if g.Baseline == "-" {
		return &exitError{ExitUsage, errors.New("--baseline needs a file")}
	}
	base, err := baseline.ReadFile(g.Baseline, kind)
	if g.UpdateBaseline && errors.Is(err, os.ErrNotExist) {
		return nil // the first baseline
	}
	if err != nil {
		return &exitError{ExitUsage, err}
	}
	g.base = base
	return nil
}

// classify compares the current report, as its JSON writer writes it redacted, with the
// baseline, and with --update-baseline writes that JSON to the baseline file. Without
// --baseline it does nothing and returns nil.
func (g *GateOptions) classify(kind baseline.Kind, red *redact.Redactor, writeJSON func(io.Writer) error) (*baseline.Result, error) {
	if g.Baseline == "" {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf); err != nil {
		return nil, err
	}
	cur := red.Bytes(buf.Bytes())
	now, err := baseline.Parse(cur, "the current report", kind)
	if err != nil {
		return nil, err
	}
	base := g.base
	if base == nil {
		base = &baseline.Report{Kind: kind}
	}
	res := baseline.Classify(base, now, g.FailOn)
	res.Baseline = g.Baseline
	return res, nil
}

// updateBaseline writes the current JSON report (with its regressions) to the baseline file,
// through a temporary file in its directory, so a failed write leaves the old baseline whole.
func (g *GateOptions) updateBaseline(red *redact.Redactor, writeJSON func(io.Writer) error, errOut io.Writer) error {
	if !g.UpdateBaseline {
		return nil
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf); err != nil {
		return err
	}
	if fi, err := os.Lstat(g.Baseline); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("--update-baseline: %s is not a regular file", g.Baseline)
	}
	tmp, err := os.CreateTemp(filepath.Dir(g.Baseline), ".idemtest-baseline-*")
	if err != nil {
		return fmt.Errorf("--update-baseline: %w", err)
	}
	_, err = tmp.Write(red.Bytes(buf.Bytes()))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), g.Baseline)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("--update-baseline: %w", err)
	}
	fmt.Fprintf(errOut, "wrote the baseline %s\n", g.Baseline)
	return nil
}

// gateFailed is the gate's verdict: with a baseline, its policy decides over the failures;
// without, failed (the command's own rule). A coverage gap fails --require-coverage either way.
func (g *GateOptions) gateFailed(failed bool, res *baseline.Result, cov []result.Coverage) bool {
	if res != nil {
		failed = res.Failed()
	}
	return failed || (g.RequireCoverage && result.Gaps(cov))
}
