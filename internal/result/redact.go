package result

import (
	"github.com/idemtest/idemtest/internal/redact"
)

// Redact replaces every secret of red in the text of the report's results (answers, arguments,
// errors, keys, URLs, failure messages and explanations, service output, warnings) before any
// reporter quotes, escapes or entity-encodes it: a secret is then absent from every output
// whatever escaping that output uses. Redacting twice changes nothing more.
func (r *Report) Redact(red *redact.Redactor) {
	if r.Err != nil {
		if msg := red.String(r.Err.Error()); msg != r.Err.Error() {
			r.Err = &redactedError{msg: msg, err: r.Err}
		}
	}
	for _, s := range r.Scenarios {
		s.Redact(red)
	}
	for i := range r.Coverage {
		c := &r.Coverage[i]
		c.Error = red.String(c.Error)
		for _, list := range [][]Uncovered{c.Uncovered, c.Exempt} {
			for j := range list {
				list[j].Tool, list[j].Reason = red.String(list[j].Tool), red.String(list[j].Reason)
			}
		}
	}
}

// Redact is Report.Redact for one scenario's result.
func (s *ScenarioResult) Redact(red *redact.Redactor) {
	if s == nil {
		return
	}
	s.Failure.Redact(red)
	for _, t := range append([]*Trial{s.FailedTrial, s.Cut}, s.History...) {
		t.Redact(red)
	}
	s.Warnings = clone(red, s.Warnings)
	for i := range s.Metrics.Unjudged {
		u := &s.Metrics.Unjudged[i]
		u.Tool = red.String(u.Tool)
	}
}

// Redact is Report.Redact for one trial.
func (t *Trial) Redact(red *redact.Redactor) {
	if t == nil {
		return
	}
	t.Session = red.String(t.Session)
	t.Failure.Redact(red)
	for i := range t.Calls {
		t.Calls[i].Redact(red)
	}
}

// Redact is Report.Redact for one failure.
func (f *Failure) Redact(red *redact.Redactor) {
	if f == nil {
		return
	}
	f.Step, f.Message, f.Expression = red.String(f.Step), red.String(f.Message), red.String(f.Expression)
	f.Violation, f.Tool = red.String(f.Violation), red.String(f.Tool)
	f.Explanation, f.Verdict = clone(red, f.Explanation), clone(red, f.Verdict)
	if f.ServiceOutput != nil {
		out := make(map[string]string, len(f.ServiceOutput))
		for k, v := range f.ServiceOutput {
			out[k] = red.String(v)
		}
		f.ServiceOutput = out
	}
}

// Redact is Report.Redact for one call: its arguments and answer are copied, not changed in
// place (the arguments may be the scenario's own). The runner's events hand a copy of a call to
// the live outputs (-v, --trace), redacted by this.
func (c *Call) Redact(red *redact.Redactor) {
	c.Step, c.Tool, c.Endpoint, c.Key, c.Error = red.String(c.Step), red.String(c.Tool), red.String(c.Endpoint), red.String(c.Key), red.String(c.Error)
	if c.Instance != nil {
		in := *c.Instance
		in.URL = red.String(in.URL)
		c.Instance = &in
	}
	if c.Args != nil {
		c.Args = red.Value(c.Args).(map[string]any)
	}
	switch v := c.Result.(type) {
	case CutAnswer:
		v.Text = red.String(v.Text)
		c.Result = v
	default:
		c.Result = red.Value(v)
	}
}

func clone(red *redact.Redactor, list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = red.String(s)
	}
	return out
}

// redactedError is a run error whose message had a secret: it says the redacted message and
// unwraps to the error itself.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
