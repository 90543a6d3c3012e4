package proxy

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// WriteText prints the verdict for a person: a summary line, each finding, and PASS or FAIL.
func WriteText(w io.Writer, v Verdict) error {
	var b strings.Builder
	fmt.Fprintf(&b, "idemtest proxy: %d calls, %d mutating, %d with a fault injected\n", v.Calls, v.Mutating, v.Faults)
	for _, f := range v.Findings {
		mark := "!"
		if f.Violation {
			mark = "✗"
		}
		fmt.Fprintf(&b, "%s %s\n", mark, f.Message)
	}
	if v.Failed() {
		fmt.Fprintf(&b, "FAIL: %d violation(s) by the agent\n", v.Violations)
	} else {
		b.WriteString("PASS: the agent kept its keys\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the verdict and the calls it judged.
func WriteJSON(w io.Writer, v Verdict) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"` // required by the xUnit schema Jenkins checks
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes one test case per check; findings that are not violations go to
// system-out.
func WriteJUnit(w io.Writer, v Verdict) error {
	s := junitSuite{Name: "idemtest proxy"}
	for _, c := range v.Checked {
		tc := junitCase{Name: string(c), Classname: "idemtest.proxy"}
		var fails, notes []string
		for _, f := range v.Findings {
			if f.Check != c {
				continue
			}
			if f.Violation {
				fails = append(fails, xmlSafe(f.Message))
			} else {
				notes = append(notes, xmlSafe(f.Message))
			}
		}
		if len(fails) > 0 {
			tc.Failure = &junitFailure{Message: fails[0], Text: strings.Join(fails, "\n")}
			s.Failures++
		}
		tc.SystemOut = strings.Join(notes, "\n")
		s.Cases = append(s.Cases, tc)
	}
	s.Tests = len(s.Cases)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// xmlSafe drops the characters XML 1.0 cannot carry (keys and arguments are the agent's bytes).
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || r >= 0x10000 && r <= 0x10FFFF {
			return r
		}
		return '\uFFFD'
	}, s)
}
