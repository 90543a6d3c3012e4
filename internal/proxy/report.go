package proxy

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// WriteText prints the verdict for a person: a summary line, each finding, then FAIL, ERROR
// (the session failed), "nothing judged" (no mutating call) or PASS.
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
	switch {
	case v.Violations > 0:
		fmt.Fprintf(&b, "FAIL: %d violation(s) by the agent\n", v.Violations)
	case v.Error != "":
	case v.Nothing() != "":
		fmt.Fprintf(&b, "nothing judged: %s\n", v.Nothing())
	case v.Faults == 0:
		// Keys were judged, retries were not: say so rather than let PASS imply both.
		b.WriteString("PASS: the agent kept its keys (no fault was injected: no retry was tested)\n")
	default:
		b.WriteString("PASS: the agent kept its keys\n")
	}
	if v.Error != "" {
		fmt.Fprintf(&b, "ERROR: %s\n", v.Error)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the verdict, with its result in a word (Verdict.Result).
func WriteJSON(w io.Writer, v Verdict) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Result string `json:"result"`
		Verdict
	}{v.Result(), v})
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
	Skipped  int         `xml:"skipped,attr,omitempty"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes one test case per check; findings that are not violations go to
// system-out. When nothing was judged every check is skipped, not passed; a failed session is
// one more test case, "tool-server", in error.
func WriteJUnit(w io.Writer, v Verdict) error {
	s := junitSuite{Name: "idemtest proxy"}
	if v.Error != "" {
		s.Errors++
		s.Cases = append(s.Cases, junitCase{Name: "tool-server", Classname: "idemtest.proxy",
			Error: &junitFailure{Message: xmlSafe(firstLine(v.Error)), Text: xmlSafe(v.Error)}})
	}
	for _, c := range v.Checked {
		tc := junitCase{Name: string(c), Classname: "idemtest.proxy"}
		if why := v.Nothing(); why != "" {
			tc.Skipped = &junitSkipped{Message: "nothing judged: " + why}
			s.Skipped++
		}
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

// firstLine is the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
