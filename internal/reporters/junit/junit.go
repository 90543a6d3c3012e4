package junit

import (
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/result"
)

// The JUnit types follow the schema Jenkins' xUnit plugin validates against (junit-10.xsd,
// vendored in testdata): the root has no skipped count and a testcase no file or line, so the
// skipped count lives on each suite, the file on the suite and the scenario's line in the case's
// system-out, where every reader shows it.

// JUnitTestSuites is the root of a JUnit XML report.
type JUnitTestSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	// Skipped is the sum of the suites' skipped counts; the schema has no attribute for it.
	Skipped int `xml:"-"`
	// Time is left out, here, on suites and on cases, by a report without durations (the
	// proxy's); every other report has it.
	Time   string           `xml:"time,attr,omitempty"`
	Suites []JUnitTestSuite `xml:"testsuite"`
}

// JUnitTestSuite is one scenario file of a run, one tool of check's battery, a sweep, or the
// proxy's session.
type JUnitTestSuite struct {
	Name      string          `xml:"name,attr"`
	Tests     int             `xml:"tests,attr"`
	Failures  int             `xml:"failures,attr"`
	Errors    int             `xml:"errors,attr"`
	Skipped   int             `xml:"skipped,attr"`
	Time      string          `xml:"time,attr,omitempty"`
	Timestamp string          `xml:"timestamp,attr,omitempty"`
	File      string          `xml:"file,attr,omitempty"`
	Cases     []JUnitTestCase `xml:"testcase"`
}

// JUnitTestCase is one scenario, check, faulty run or agent check.
type JUnitTestCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr,omitempty"`
	Failure   *JUnitMessage `xml:"failure,omitempty"`
	Error     *JUnitMessage `xml:"error,omitempty"`
	Skipped   *JUnitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitMessage is a failure, error or skip.
type JUnitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// Write writes rep as JUnit XML: a testsuite per scenario file, a testcase per scenario.
func Write(w io.Writer, rep *result.Report) error {
	return encode(w, generate(rep))
}

// encode writes a JUnit document with its XML header, indented: the one writer of the run,
// check, sweep and proxy reports.
func encode(w io.Writer, doc JUnitTestSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write junit report: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// add appends a suite to the report and its counts to the report's.
func (r *JUnitTestSuites) add(s JUnitTestSuite) {
	r.Tests += s.Tests
	r.Failures += s.Failures
	r.Errors += s.Errors
	r.Skipped += s.Skipped
	r.Suites = append(r.Suites, s)
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func generate(rep *result.Report) JUnitTestSuites {
	root := JUnitTestSuites{Name: "idemtest", Time: seconds(rep.Duration)}
	byFile := map[string]*JUnitTestSuite{}
	var files []string
	for _, r := range rep.Scenarios {
		file := r.Scenario.File
		s := byFile[file]
		if s == nil {
			s = &JUnitTestSuite{Name: file, File: file}
			if !r.Start.IsZero() {
				s.Timestamp = r.Start.UTC().Format("2006-01-02T15:04:05")
			}
			byFile[file] = s
			files = append(files, file)
		}
		tc := JUnitTestCase{
			Name: clean(r.Scenario.Name), Classname: Classname(file), Time: seconds(r.Duration),
		}
		var out strings.Builder
		fmt.Fprintf(&out, "scenario: %s:%d\n", file, r.Scenario.Pos.Line)
		fmt.Fprintf(&out, "trials: %d/%d passed\n", r.TrialsPassed, r.Trials)
		if r.Fanouts > 0 {
			fmt.Fprintf(&out, "fan-outs: %d/%d overlapped\n", r.Overlapped, r.Fanouts)
		}
		for _, u := range r.Metrics.Unjudged {
			fmt.Fprintf(&out, "warning: %s\n", u.Message())
		}
		for _, warning := range r.Warnings {
			fmt.Fprintf(&out, "warning: %s\n", warning)
		}
		t := r.FailedTrial
		if t == nil {
			t = r.Trial1
		}
		if t != nil {
			fmt.Fprintf(&out, "trial %d, session %s\n%s", t.Index, t.Session, reporters.History(t))
		}
		// The failure's text, what CI pages show first, ends with the command that reruns the
		// failing trial.
		rerun := ""
		if t := r.FailedTrial; t != nil {
			rerun = "rerun: " + reporters.Rerun(r, t) + "\n"
		}
		if c := r.Cut; c != nil && r.Status == result.Interrupted {
			fmt.Fprintf(&out, "trial %d, session %s, cut short by the interrupt\n%s", c.Index, c.Session, reporters.History(c))
		}
		tc.SystemOut = clean(out.String())
		known := rep.Regressions.IsKnown(baseline.ScenarioSubject(r.Scenario.File, r.Scenario.Name))
		switch r.Status {
		case result.Failed, result.Errored:
			if !known {
				break
			}
			// A failure the baseline lists: CI parsers show it, the build does not fail on it.
			tc.Skipped = &JUnitMessage{Message: KnownFailure, Text: clean(firstLine(r.Failure) + "\n" + reporters.FailureText(r.Failure))}
			s.Skipped++
		}
		switch {
		case known && tc.Skipped != nil:
		case r.Status == result.Failed:
			msg := firstLine(r.Failure)
			if r.TrialsRun > 1 {
				msg = fmt.Sprintf("failed in %d/%d %s: %s", r.TrialsFailed, r.TrialsRun, plural.Noun(r.TrialsRun, "trial"), msg)
			}
			tc.Failure = &JUnitMessage{Message: clean(msg), Type: string(r.Failure.Kind), Text: clean(reporters.FailureText(r.Failure) + rerun)}
			s.Failures++
		case r.Status == result.Errored:
			tc.Error = &JUnitMessage{Message: clean(firstLine(r.Failure)), Type: "error", Text: clean(reporters.FailureText(r.Failure) + rerun)}
			s.Errors++
		case r.Status == result.Skipped:
			tc.Skipped = &JUnitMessage{Message: "not run"}
			s.Skipped++
		case r.Status == result.Interrupted:
			// Not a failure: the run was stopped, the tool was not judged.
			tc.Skipped = &JUnitMessage{Message: reporters.InterruptedNote(r)}
			s.Skipped++
		}
		s.Tests++
		s.Cases = append(s.Cases, tc)
	}
	sort.Strings(files)
	for _, f := range files {
		s := byFile[f]
		var d time.Duration
		for _, r := range rep.Scenarios {
			if r.Scenario.File == f {
				d += r.Duration
			}
		}
		s.Time = seconds(d)
		root.add(*s)
	}
	if rep.Err != nil {
		root.add(JUnitTestSuite{Name: "idemtest", Tests: 1, Errors: 1, Time: "0.000",
			Cases: []JUnitTestCase{{Name: "services", Classname: "idemtest", Time: "0.000",
				Error: &JUnitMessage{Message: clean(reporters.OneLine(rep.Err.Error(), 200)), Type: "error", Text: clean(rep.Err.Error())}}}})
	}
	return root
}

// Classname is a scenario file's JUnit classname: its path without the extension, with dots for
// slashes, as JUnit readers expect a package-qualified class (examples/scenarios/burst.yaml is
// examples.scenarios.burst).
func Classname(file string) string {
	file = filepath.ToSlash(strings.TrimSuffix(file, filepath.Ext(file)))
	return strings.ReplaceAll(strings.TrimPrefix(file, "./"), "/", ".")
}

func firstLine(f *result.Failure) string {
	return reporters.OneLine(fmt.Sprintf("%s: %s: %s", f.Pos, reporters.StepLabel(f.Step), strings.SplitN(f.Message, "\n", 2)[0]), 300)
}

// clean makes any bytes safe for XML 1.0: invalid UTF-8 and characters XML forbids become
// U+FFFD, so the report parses whatever the endpoint returned.
func clean(s string) string {
	if !strings.ContainsFunc(s, invalidXML) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if invalidXML(r) {
			r = '\uFFFD'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func invalidXML(r rune) bool {
	return !(r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF))
}
