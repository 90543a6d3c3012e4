package baseline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/idemtest/idemtest/internal/regularfile"
)

// Kind is the command whose JSON report a baseline is.
type Kind string

// The kinds of report a baseline can be.
const (
	Run   Kind = "run"
	Check Kind = "check"
	Sweep Kind = "sweep"
	Audit Kind = "audit"
)

// Version is the format version of the reports this package reads (the JSON reports' version).
const Version = 1

// MaxBytes caps a baseline file: a committed report larger than this is refused, not read.
const MaxBytes = 64 << 20

// The --fail-on policies.
const (
	// FailOnNew fails the gate only on failures the baseline does not list.
	FailOnNew = "new"
	// FailOnAny fails the gate on any failure, as without a baseline.
	FailOnAny = "any"
)

// Failure is one failure named by its stable identity.
type Failure struct {
	// Subject is what was judged: a scenario (file and name), a tool's check, a sweep's call
	// and fault. A subject judged now that failed in the baseline and passes now is fixed.
	Subject string `json:"subject"`
	// What says how it failed: the failure kind and where (step, expression, violation kind
	// and tool, cell status).
	What string `json:"what"`
}

// ID is the failure's identity: its subject and how it failed.
func (f Failure) ID() string { return f.Subject + "\x00" + f.What }

// String is the failure in one line.
func (f Failure) String() string { return f.Subject + ": " + f.What }

// Report is what a JSON report says for the gate: every subject it judged and its failures.
type Report struct {
	Kind     Kind
	Subjects []string
	Failures []Failure
}

// Result classifies the current failures against a baseline; the JSON reports carry it as
// "regressions".
type Result struct {
	// Baseline is the file compared with.
	Baseline string `json:"baseline"`
	// FailOn is the policy: new or any.
	FailOn string `json:"fail_on"`
	// New failed now and not in the baseline; Known failed in both; Fixed failed in the
	// baseline and passed now (its subject was judged). Each is sorted.
	New   []Failure `json:"new"`
	Known []Failure `json:"known"`
	Fixed []Failure `json:"fixed"`
}

// Classify sorts the failures of now into new and known by their identity in base, and the
// failures of base whose subject now judged without that failure into fixed. A subject of the
// baseline that now did not judge (filtered out, another shard) is neither.
func Classify(base, now *Report, failOn string) *Result {
	res := &Result{FailOn: failOn, New: []Failure{}, Known: []Failure{}, Fixed: []Failure{}}
	inBase := map[string]bool{}
	for _, f := range base.Failures {
		inBase[f.ID()] = true
	}
	inNow := map[string]bool{}
	for _, f := range now.Failures {
		if inNow[f.ID()] {
			continue
		}
		inNow[f.ID()] = true
		if inBase[f.ID()] {
			res.Known = append(res.Known, f)
		} else {
			res.New = append(res.New, f)
		}
	}
	judged := map[string]bool{}
	for _, s := range now.Subjects {
		judged[s] = true
	}
	seen := map[string]bool{}
	for _, f := range base.Failures {
		if judged[f.Subject] && !inNow[f.ID()] && !seen[f.ID()] {
			seen[f.ID()] = true
			res.Fixed = append(res.Fixed, f)
		}
	}
	for _, l := range [][]Failure{res.New, res.Known, res.Fixed} {
		sort.Slice(l, func(i, j int) bool { return l[i].ID() < l[j].ID() })
	}
	return res
}

// Failed reports whether the gate fails under the policy: a new failure, or with FailOnAny
// any failure.
func (r *Result) Failed() bool {
	if r.FailOn == FailOnAny {
		return len(r.New)+len(r.Known) > 0
	}
	return len(r.New) > 0
}

// IsKnown reports whether subject's current failures are all in the baseline, for reports to
// mark: a subject with a new failure beside a known one is not known.
func (r *Result) IsKnown(subject string) bool {
	if r == nil {
		return false
	}
	for _, f := range r.New {
		if f.Subject == subject {
			return false
		}
	}
	for _, f := range r.Known {
		if f.Subject == subject {
			return true
		}
	}
	return false
}

// Line is the one-line summary every report shows.
func (r *Result) Line() string {
	s := fmt.Sprintf("Baseline: %d new, %d known, %d fixed", len(r.New), len(r.Known), len(r.Fixed))
	if len(r.Fixed) > 0 || len(r.New) > 0 {
		s += " — update the baseline with --update-baseline"
	}
	return s
}

// Subjects of each kind: the one spelling of what a report judged, for Parse and for reporters
// that mark known failures.

// ScenarioSubject names a scenario of a run: its file and name.
func ScenarioSubject(file, name string) string { return "scenario " + file + " " + strconv.Quote(name) }

// CheckSubject names one check of one tool.
func CheckSubject(tool, check string) string { return "tool " + tool + " check " + check }

// SweepSubject names one faulty run of a sweep (seq 0: run 0, without a fault).
func SweepSubject(seq int, tool, fault string) string {
	if seq == 0 {
		return "run 0"
	}
	return fmt.Sprintf("call %d %s fault %s", seq, tool, fault)
}

// runSubject names a run that could not start its services.
const runSubject = "run"

// ReadFile reads the baseline at path, which must be a JSON report of kind and of Version.
func ReadFile(path string, kind Kind) (*Report, error) {
	// regularfile refuses a named pipe before opening it: os.Open of a FIFO without a writer
	// blocks for good.
	b, err := regularfile.ReadSmall(path, MaxBytes)
	var notRegular *regularfile.NotRegularError
	var tooLarge *regularfile.TooLargeError
	switch {
	case errors.As(err, &notRegular):
		return nil, fmt.Errorf("baseline %s is not a regular file (%s)", path, regularfile.Kind(notRegular.Mode))
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("baseline %s is larger than %d MiB: it is not a report idemtest wrote", path, MaxBytes>>20)
	case err != nil:
		return nil, fmt.Errorf("read baseline: %w", err)
	}
	return Parse(b, path, kind)
}

// header is what tells a report's kind and version.
type header struct {
	Report  string          `json:"report"`
	Version *int            `json:"version"`
	Tool    string          `json:"tool"`
	Scen    json.RawMessage `json:"scenarios"`
	Checks  json.RawMessage `json:"checks"`
	Cells   json.RawMessage `json:"cells"`
	Trace   json.RawMessage `json:"trace"`
}

// kindOf is the kind a report says it is, or, for one written before reports named their kind,
// the kind its shape shows ("" when neither).
func (h header) kindOf() Kind {
	switch {
	case h.Report != "":
		return Kind(h.Report)
	case h.Tool == "idemtest" && h.Scen != nil:
		return Run
	case h.Checks != nil:
		return Check
	case h.Cells != nil && h.Trace != nil:
		return Sweep
	}
	return ""
}

// Sniff reads what kind of idemtest JSON report b (named name in errors) is, and checks that
// its format is the Version this package reads: an error says why b is no such report (with
// file:line:col for bad JSON).
func Sniff(b []byte, name string) (Kind, error) {
	var h header
	if err := json.Unmarshal(b, &h); err != nil {
		return "", syntaxError(b, name, err, "")
	}
	kind := h.kindOf()
	if kind == "" {
		return "", fmt.Errorf("%s is %w (the --json FILE of run, check, sweep or audit)", name, ErrNotReport)
	}
	v := 1 // check and sweep reports written before they carried a version
	if h.Version != nil {
		v = *h.Version
	} else if kind == Run {
		v = 0
	}
	if v != Version {
		return kind, &VersionError{Name: name, Got: v}
	}
	return kind, nil
}

// ErrNotReport is JSON that is no report of idemtest.
var ErrNotReport = errors.New("not a JSON report of idemtest")

// VersionError is a report of another format version than this idemtest reads.
type VersionError struct {
	Name string
	Got  int
}

// Error names the file and both versions.
func (e *VersionError) Error() string {
	return fmt.Sprintf("%s is a report of format version %d; this idemtest reads version %d", e.Name, e.Got, Version)
}

// Parse reads the JSON report b (named name in errors) of kind into what the gate compares.
func Parse(b []byte, name string, kind Kind) (*Report, error) {
	got, serr := Sniff(b, name)
	var ve *VersionError
	switch {
	case errors.As(serr, &ve) && got == kind:
		return nil, fmt.Errorf("%w: write the baseline again with --update-baseline", serr)
	case serr != nil && !errors.Is(serr, ErrNotReport) && got == "":
		return nil, fmt.Errorf("%w: a baseline is the --json report of the same command", serr)
	case got == "":
		return nil, fmt.Errorf("%s is not a JSON report of idemtest: write one with idemtest %s --json %s", name, kind, name)
	case got != kind:
		return nil, fmt.Errorf("%s is the report of idemtest %s, not of idemtest %s: a baseline compares a command with its own report (idemtest %s --json FILE)", name, got, kind, kind)
	}
	var rep *Report
	var err error
	switch kind {
	case Run:
		rep, err = parseRun(b)
	case Check:
		rep, err = parseCheck(b)
	case Sweep:
		rep, err = parseSweep(b)
	case Audit:
		rep, err = parseAudit(b)
	default:
		return nil, fmt.Errorf("unknown report kind %q", kind)
	}
	if err != nil {
		return nil, syntaxError(b, name, err, ": a baseline is the --json report of the same command")
	}
	rep.Kind = kind
	return rep, nil
}

// syntaxError says where in b the JSON is wrong, as file:line:col, followed by hint.
func syntaxError(b []byte, name string, err error, hint string) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset - 1 // the offset is past the byte that was wrong
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return fmt.Errorf("%s: %w%s", name, err, hint)
	}
	off = max(0, min(off, int64(len(b))))
	line := bytes.Count(b[:off], []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(b[:off], '\n')
	return fmt.Errorf("%s:%d:%d: %w%s", name, line, col, err, hint)
}

// runFailure is what the gate reads of a run report's failure.
type runFailure struct {
	Kind       string `json:"kind"`
	Step       string `json:"step"`
	Expression string `json:"expression"`
	Violation  string `json:"violation"`
	Tool       string `json:"tool"`
	Violations []struct {
		Violation string `json:"violation"`
		Tool      string `json:"tool"`
		Step      string `json:"step"`
	} `json:"violations"`
}

type runReport struct {
	Error     string `json:"error"`
	Scenarios []struct {
		Name    string      `json:"name"`
		File    string      `json:"file"`
		Status  string      `json:"status"`
		Failure *runFailure `json:"failure"`
		History []struct {
			Failure *runFailure `json:"failure"`
		} `json:"history"`
		Metrics struct {
			Duplicates    int `json:"duplicate_executions"`
			ReplaysDiffer int `json:"replays_differ"`
		} `json:"metrics"`
	} `json:"scenarios"`
}

func parseRun(b []byte) (*Report, error) {
	var in runReport
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	rep := &Report{}
	if in.Error != "" {
		// A run whose services did not start judged nothing; its failure is the run's.
		rep.Failures = append(rep.Failures, Failure{runSubject, "the run could not start"})
		return rep, nil
	}
	rep.Subjects = append(rep.Subjects, runSubject)
	for _, s := range in.Scenarios {
		if s.Status == "skipped" || s.Status == "interrupted" {
			continue
		}
		subj := ScenarioSubject(s.File, s.Name)
		rep.Subjects = append(rep.Subjects, subj)
		// A failure is every assertion failure and violation it carries, in every trial: a
		// violation under a known assertion failure is new, not hidden by it.
		var whats []string
		seen := map[string]bool{}
		add := func(w string) {
			if !seen[w] {
				seen[w] = true
				whats = append(whats, w)
			}
		}
		fails := []*runFailure{s.Failure}
		for _, t := range s.History {
			fails = append(fails, t.Failure)
		}
		structured := false // the report names its violations (reports before did not)
		for _, f := range fails {
			if f == nil {
				continue
			}
			add(runWhat(f.Kind, f.Step, f.Expression, f.Violation, f.Tool))
			for _, v := range f.Violations {
				structured = true
				add(runWhat("verdict", v.Step, "", v.Violation, v.Tool))
			}
		}
		if len(whats) == 0 && (s.Status == "failed" || s.Status == "errored") {
			add(s.Status)
		}
		if !structured && (s.Failure == nil || s.Failure.Kind != "verdict") {
			// A report without the violations named: the metrics still say which kinds were.
			if s.Metrics.Duplicates > 0 {
				add("verdict: duplicate executions")
			}
			if s.Metrics.ReplaysDiffer > 0 {
				add("verdict: replays differ")
			}
		}
		for _, w := range whats {
			rep.Failures = append(rep.Failures, Failure{subj, w})
		}
	}
	return rep, nil
}

// runWhat is how a scenario failed: the kind, the step, and for an assertion its expression,
// for the verdict the violation and its tool. Lines are left out: editing a file above a step
// does not make its failure new.
func runWhat(kind, step, expr, violation, tool string) string {
	var b strings.Builder
	b.WriteString(kind)
	if step != "" {
		b.WriteString(" at step " + step)
	}
	switch {
	case kind == "assert" && expr != "":
		b.WriteString(": " + expr)
	case kind == "verdict" && violation != "":
		b.WriteString(": " + violation)
		if tool != "" {
			b.WriteString(" on " + tool)
		}
	}
	return b.String()
}

type checkReport struct {
	Tools []struct {
		Tool  string `json:"tool"`
		Cells []struct {
			Check  string `json:"check"`
			Status string `json:"status"`
		} `json:"cells"`
	} `json:"tools"`
}

func parseCheck(b []byte) (*Report, error) {
	var in checkReport
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	rep := &Report{}
	for _, t := range in.Tools {
		for _, c := range t.Cells {
			if c.Status == "skip" {
				continue
			}
			subj := CheckSubject(t.Tool, c.Check)
			rep.Subjects = append(rep.Subjects, subj)
			if c.Status == "fail" {
				rep.Failures = append(rep.Failures, Failure{subj, c.Status})
			}
		}
	}
	return rep, nil
}

type sweepCell struct {
	Seq    int    `json:"seq"`
	Tool   string `json:"tool"`
	Fault  string `json:"fault"`
	Status string `json:"status"`
}

type sweepReport struct {
	Baseline *sweepCell  `json:"baseline"`
	Cells    []sweepCell `json:"cells"`
}

func parseSweep(b []byte) (*Report, error) {
	var in sweepReport
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	rep := &Report{}
	if in.Baseline != nil {
		subj := SweepSubject(0, "", "")
		rep.Subjects = append(rep.Subjects, subj)
		if in.Baseline.Status != "pass" {
			rep.Failures = append(rep.Failures, Failure{subj, in.Baseline.Status})
		}
	}
	for _, c := range in.Cells {
		if c.Status == "skip" {
			continue
		}
		subj := SweepSubject(c.Seq, c.Tool, c.Fault)
		rep.Subjects = append(rep.Subjects, subj)
		if c.Status == "fail" {
			rep.Failures = append(rep.Failures, Failure{subj, c.Status})
		}
	}
	return rep, nil
}
