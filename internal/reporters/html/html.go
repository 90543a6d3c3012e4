package html

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/result"
)

// The HTML report is one self-contained page: its CSS and script are inline and its
// Content-Security-Policy forbids every fetch, so it looks the same offline, years later, as a
// CI artefact. html/template escapes everything that came from the server under test.

//go:embed html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Parse(htmlSource))

// Write writes rep as a self-contained HTML page.
func Write(w io.Writer, rep *result.Report, version string) error {
	if err := htmlTemplate.Execute(w, generate(rep, version)); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

// htmlReport is what the template shows; every string in it is plain text.
type htmlReport struct {
	Version, Start, Duration            string
	Interrupted                         bool
	Err                                 string
	Passed, Failed, Errored, Skipped    int
	Weak, Duplicates, ReplaysDiffer     int
	Calls                               int
	ReplayRate, ConflictRate, Summary   string
	Scenarios                           []htmlScenario
	FailedScenarios, DuplicateScenarios int
	// Gate is the baseline's line and groups, new first, and the coverage lines (DESIGN §12).
	Gate *htmlGate
}

// htmlGate is the gate's part of the report.
type htmlGate struct {
	Line     string
	Groups   []htmlGateGroup
	Coverage []string
}

type htmlGateGroup struct {
	Name     string
	Failures []string
}

type htmlScenario struct {
	Anchor, Name, File, Status, Trials, Duration, Weak string
	Line                                               int
	Tags                                               []string
	Duplicates, ReplaysDiffer                          int
	ReplayRate, ConflictRate                           string
	Failure                                            *htmlFailure
	TrialLabel                                         string
	Trial                                              *htmlTrial
}

type htmlFailure struct {
	Kind, Title, Pos, Step, Message, Expression string
	Explanation                                 []string
	// Verdict leads a failure that an assertion caused but the exactly-once verdict also found.
	Verdict []string
	// Answers are the verdict's answers to one key, shown side by side.
	Answers  []htmlAnswer
	Differ   string
	Services []htmlService
	Rerun    string
}

type htmlAnswer struct{ Label, Body string }

type htmlService struct{ Name, Output string }

type htmlTrial struct {
	Index   int
	Session string
	Span    string
	Groups  []htmlGroup
}

// htmlGroup is one step's calls: a fan-out's copies drawn as a waterfall on their own time
// axis, or the calls of a sequential step (its attempts) drawn on the trial's axis.
type htmlGroup struct {
	Step, Tool, Key string
	Fanout          bool
	// Executions is how many times the verdict found the group's key executed, when more
	// than once.
	Executions int
	Span, Note string
	Calls      []htmlCall
}

type htmlCall struct {
	Label, Outcome, Status, Error, Duration string
	Lost, Replayed, Conflict                bool
	// TraceID is the W3C trace id the call carried: the server's own trace of it.
	TraceID string
	// Offset and Width place the call on its group's axis (percentages); Send, Wait and Recv
	// split it (percentages of the call): start → release (last byte sent), release → first
	// byte, first byte → end.
	Offset, Width, Send, Wait, Recv string
	Times                           string
}

func generate(rep *result.Report, version string) htmlReport {
	out := htmlReport{Gate: gateOf(rep), Version: version, Start: rep.Start.UTC().Format(time.RFC3339), Duration: reporters.FormatDuration(rep.Duration),
		Interrupted: rep.Interrupted, Summary: reporters.Summary(rep)}
	if rep.Err != nil {
		out.Err = reporters.EscapeText(rep.Err.Error())
	}
	var m result.Metrics
	for i, r := range rep.Scenarios {
		switch r.Status {
		case result.Passed:
			out.Passed++
		case result.Failed:
			out.Failed++
		case result.Errored:
			out.Errored++
		case result.Skipped:
			out.Skipped++
		}
		if reporters.Weak(r) != "" {
			out.Weak++
		}
		if r.Metrics.DuplicateExecutions > 0 {
			out.DuplicateScenarios++
		}
		m.Add(r.Metrics)
		out.Scenarios = append(out.Scenarios, htmlScenarioOf(i, r))
	}
	out.FailedScenarios = out.Failed + out.Errored
	out.Duplicates, out.ReplaysDiffer, out.Calls = m.DuplicateExecutions, m.ReplaysDiffer, m.Calls
	out.ReplayRate, out.ConflictRate = reporters.Rate(m.Replayed, m.Repeats()), reporters.Rate(m.Conflicts, m.Keyed)
	return out
}

func htmlScenarioOf(i int, r *result.ScenarioResult) htmlScenario {
	s := htmlScenario{
		Anchor: fmt.Sprintf("s%d", i+1), Name: reporters.EscapeText(r.Scenario.Name), File: r.Scenario.File, Line: r.Scenario.Pos.Line,
		Status: string(r.Status), Tags: r.Scenario.Tags, Duration: reporters.FormatDuration(r.Duration), Weak: reporters.Weak(r),
		Duplicates: r.Metrics.DuplicateExecutions, ReplaysDiffer: r.Metrics.ReplaysDiffer,
		ReplayRate: reporters.Rate(r.Metrics.Replayed, r.Metrics.Repeats()), ConflictRate: reporters.Rate(r.Metrics.Conflicts, r.Metrics.Keyed),
		Trials: fmt.Sprintf("%d/%d %s passed", r.TrialsPassed, r.Trials, plural.Noun(r.Trials, "trial")),
	}
	switch r.Status {
	case result.Skipped:
		s.Trials = "skipped"
	case result.Interrupted:
		s.Trials = fmt.Sprintf("interrupted (%d/%d %s passed before)", r.TrialsPassed, r.Trials, plural.Noun(r.Trials, "trial"))
	}
	if f := r.Failure; f != nil {
		s.Failure = htmlFailureOf(r)
	}
	switch {
	case r.FailedTrial != nil:
		t := r.FailedTrial
		s.TrialLabel = fmt.Sprintf("failed trial %d of %d (failed in %d of %d %s run), session %s", t.Index, r.Trials, r.TrialsFailed, r.TrialsRun, plural.Noun(r.TrialsRun, "trial"), t.Session)
		s.Trial = htmlTrialOf(t, executedKeys(r.Failure))
	case r.Trial1 != nil:
		s.TrialLabel = fmt.Sprintf("trial 1 of %d, session %s", r.Trials, r.Trial1.Session)
		s.Trial = htmlTrialOf(r.Trial1, nil)
	}
	return s
}

func htmlFailureOf(r *result.ScenarioResult) *htmlFailure {
	f := r.Failure
	hf := &htmlFailure{Kind: string(f.Kind), Pos: f.Pos.String(), Step: reporters.StepLabel(f.Step), Message: reporters.EscapeText(f.Message), Expression: reporters.EscapeText(f.Expression)}
	switch f.Kind {
	case "verdict":
		hf.Title = "exactly-once verdict"
	case "assert":
		hf.Title = "assertion failed"
	case "expect":
		hf.Title = "unexpected outcome"
	default:
		hf.Title = "error"
	}
	for _, l := range f.Explanation {
		hf.Explanation = append(hf.Explanation, reporters.EscapeText(l))
	}
	for _, l := range reporters.VerdictLead(f) {
		hf.Verdict = append(hf.Verdict, reporters.EscapeText(l))
	}
	hf.Answers, hf.Differ = verdictAnswers(f.Explanation)
	for _, name := range slices.Sorted(maps.Keys(f.ServiceOutput)) {
		if out := f.ServiceOutput[name]; out != "" {
			hf.Services = append(hf.Services, htmlService{Name: name, Output: reporters.EscapeText(out)})
		}
	}
	if t := r.FailedTrial; t != nil {
		hf.Rerun = reporters.Rerun(r, t)
	}
	return hf
}

// answersHeading is the line of a verdict explanation above a violation's answers, and
// answerLine one answer under it: "LABEL  ANSWER", indented two more than the heading, the
// label and the answer separated by at least two spaces (verdict.Violation.Explain aligns them).
var (
	answersHeading = regexp.MustCompile(`^( *)\S.*(each an execution|must be the stored first answer):$`)
	answerLine     = regexp.MustCompile(`^(\S.*?)\s{2,}(\S.*)$`)
)

// verdictAnswers takes the first violation's answers out of an explanation, to show them side
// by side, with the fields where they differ. The explanation of a failed assertion carries
// them too when the verdict also failed.
func verdictAnswers(lines []string) ([]htmlAnswer, string) {
	var answers []htmlAnswer
	indent := ""
	for i, l := range lines {
		m := answersHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		indent = m[1] + "  "
		for _, l := range lines[i+1:] {
			rest, ok := strings.CutPrefix(l, indent)
			if !ok || strings.HasPrefix(rest, " ") {
				break
			}
			if d, ok := strings.CutPrefix(rest, "they differ at: "); ok {
				return answers, d
			}
			if strings.HasPrefix(rest, "… and ") {
				answers = append(answers, htmlAnswer{Label: rest})
				continue
			}
			a := answerLine.FindStringSubmatch(rest)
			if a == nil {
				break
			}
			answers = append(answers, htmlAnswer{Label: reporters.EscapeText(a[1]), Body: reporters.EscapeText(a[2])})
		}
		break
	}
	return answers, ""
}

// executedLine is how a verdict violation names its key (verdict.Violation.Message).
var executedLine = regexp.MustCompile(`key (\S+) executed ([0-9]+) times`)

// executedKeys are the keys a failure says were executed more than once, with their counts.
func executedKeys(f *result.Failure) map[string]int {
	if f == nil {
		return nil
	}
	keys := map[string]int{}
	for _, l := range append([]string{f.Message}, f.Explanation...) {
		for _, m := range executedLine.FindAllStringSubmatch(l, -1) {
			var n int
			_, _ = fmt.Sscan(m[2], &n) // the pattern matched digits
			keys[m[1]] = max(keys[m[1]], n)
		}
	}
	return keys
}

func htmlTrialOf(t *result.Trial, executed map[string]int) *htmlTrial {
	ht := &htmlTrial{Index: t.Index, Session: t.Session}
	if len(t.Calls) == 0 {
		return ht
	}
	t0, t1 := span(t.Calls)
	ht.Span = reporters.FormatDuration(t1.Sub(t0))
	for i := 0; i < len(t.Calls); {
		j := i + 1
		for j < len(t.Calls) && t.Calls[j].Step == t.Calls[i].Step {
			j++
		}
		g := htmlGroupOf(t.Calls[i:j], t0, t1)
		g.Executions = executed[g.Key]
		ht.Groups = append(ht.Groups, g)
		i = j
	}
	return ht
}

func htmlGroupOf(calls []result.Call, t0, t1 time.Time) htmlGroup {
	g := htmlGroup{Step: reporters.StepLabel(calls[0].Step), Tool: calls[0].Tool, Key: calls[0].Key}
	for _, c := range calls {
		if c.Copy > 0 {
			g.Fanout = true
		}
	}
	if g.Fanout {
		// A waterfall on the fan-out's own axis: the copies' microseconds are invisible on
		// the trial's.
		t0, t1 = span(calls)
		g.Span = reporters.FormatDuration(t1.Sub(t0))
		var ok, conflict, info, fail int
		first, last := time.Time{}, time.Time{}
		for _, c := range calls {
			r := released(c)
			if first.IsZero() || r.Before(first) {
				first = r
			}
			if r.After(last) {
				last = r
			}
			switch {
			case c.Conflict:
				conflict++
			case c.Outcome == outcome.OK:
				ok++
			case c.Outcome == outcome.Info:
				info++
			default:
				fail++
			}
		}
		g.Note = fmt.Sprintf("%s, one key: %d ok, %d conflict, %d info, %d fail · released within %s", plural.Count(len(calls), "copy"), ok, conflict, info, fail, reporters.FormatDuration(last.Sub(first)))
	}
	total := t1.Sub(t0)
	for _, c := range calls {
		end := c.Start.Add(c.Duration)
		rel, fb := released(c), firstByte(c)
		hc := htmlCall{
			Label: callLabel(c), Outcome: string(c.Outcome), Status: fmt.Sprint(c.Status), Error: reporters.EscapeText(c.Error),
			Duration: reporters.FormatDuration(c.Duration), Lost: c.Lost, Replayed: c.Replayed, Conflict: c.Conflict,
			TraceID: reporters.Escape(c.TraceID), Offset: pct(c.Start.Sub(t0), total), Width: pct(c.Duration, total),
			Send: pct(rel.Sub(c.Start), c.Duration), Wait: pct(fb.Sub(rel), c.Duration), Recv: pct(end.Sub(fb), c.Duration),
		}
		if c.Status == 0 {
			hc.Status = "-"
		}
		hc.Times = fmt.Sprintf("start +%s · released +%s · first byte +%s · end +%s",
			micros(c.Start.Sub(t0)), micros(rel.Sub(t0)), micros(fb.Sub(t0)), micros(end.Sub(t0)))
		g.Calls = append(g.Calls, hc)
	}
	return g
}

// pct is d as a percentage of total, for a CSS length.
func pct(d, total time.Duration) string {
	if total <= 0 || d <= 0 {
		return "0"
	}
	return fmt.Sprintf("%.2f", min(100, 100*float64(d)/float64(total)))
}

// span is the time from the first call's start to the last call's end.
func span(calls []result.Call) (time.Time, time.Time) {
	t0, t1 := calls[0].Start, calls[0].Start.Add(calls[0].Duration)
	for _, c := range calls {
		if c.Start.Before(t0) {
			t0 = c.Start
		}
		if e := c.Start.Add(c.Duration); e.After(t1) {
			t1 = e
		}
	}
	return t0, t1
}

// released is when the call's last byte left, clamped into the call; its start when unknown.
func released(c result.Call) time.Time {
	end := c.Start.Add(c.Duration)
	switch {
	case c.Sent.IsZero() || c.Sent.Before(c.Start):
		return c.Start
	case c.Sent.After(end):
		return end
	}
	return c.Sent
}

// firstByte is when the answer began to arrive, clamped between the release and the end; the
// end when unknown (no answer came).
func firstByte(c result.Call) time.Time {
	end, rel := c.Start.Add(c.Duration), released(c)
	switch {
	case c.Answered.IsZero() || c.Answered.After(end):
		return end
	case c.Answered.Before(rel):
		return rel
	}
	return c.Answered
}

func micros(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Millisecond {
		return fmt.Sprintf("%dµs", d.Microseconds())
	}
	return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
}

func callLabel(c result.Call) string {
	l := reporters.StepLabel(c.Step)
	if c.Copy > 0 {
		l = fmt.Sprintf("copy %d", c.Copy)
	}
	if c.Attempt > 1 {
		l += fmt.Sprintf(" attempt %d", c.Attempt)
	}
	if c.Instance != nil {
		l += fmt.Sprintf(" @%d", c.Instance.Index)
	}
	return l
}

// gateOf is what the gate adds to the report, or nil without a baseline or coverage.
func gateOf(rep *result.Report) *htmlGate {
	if rep.Regressions == nil && len(rep.Coverage) == 0 {
		return nil
	}
	g := &htmlGate{}
	if res := rep.Regressions; res != nil {
		g.Line = res.Line()
		for _, grp := range []struct {
			name string
			list []baseline.Failure
		}{{"new", res.New}, {"known", res.Known}, {"fixed", res.Fixed}} {
			if len(grp.list) == 0 {
				continue
			}
			hg := htmlGateGroup{Name: grp.name}
			for _, f := range grp.list {
				hg.Failures = append(hg.Failures, f.String())
			}
			g.Groups = append(g.Groups, hg)
		}
	}
	for _, c := range rep.Coverage {
		switch {
		case c.Error != "":
			g.Coverage = append(g.Coverage, "endpoint "+c.Endpoint+": its tools could not be listed: "+c.Error)
		case len(c.Uncovered) > 0:
			var names []string
			for _, u := range c.Uncovered {
				names = append(names, u.Tool)
			}
			g.Coverage = append(g.Coverage, fmt.Sprintf("endpoint %s: %d of %d mutating tools not tested: %s", c.Endpoint, len(c.Uncovered), c.Mutating, strings.Join(names, ", ")))
		}
		for _, e := range c.Exempt {
			g.Coverage = append(g.Coverage, "endpoint "+c.Endpoint+": "+e.Tool+" exempt: "+e.Reason)
		}
	}
	return g
}
