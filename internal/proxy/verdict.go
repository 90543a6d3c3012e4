package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/idemtest/idemtest/internal/trace"
	"github.com/idemtest/idemtest/internal/verdict"
)

// Check names one rule the agent is judged by; the ids are stable (JSON, JUnit).
type Check string

const (
	// CheckKeyPresent: every mutating call carries a key.
	CheckKeyPresent Check = "key-present"
	// CheckRetrySameKey: after a fault, the retry of the same call carries the same key.
	CheckRetrySameKey Check = "retry-same-key"
	// CheckOneKeyOneCall: one key never covers two different calls.
	CheckOneKeyOneCall Check = "one-key-one-call"
	// CheckRetried: a call whose outcome a fault hid is retried.
	CheckRetried Check = "retried"
	// CheckKeyPattern: keys match --key-pattern.
	CheckKeyPattern Check = "key-pattern"
)

// Checks lists every check in report order.
var Checks = []Check{CheckKeyPresent, CheckRetrySameKey, CheckOneKeyOneCall, CheckRetried, CheckKeyPattern}

// JudgeOptions tune the agent verdict.
type JudgeOptions struct {
	// RequireRetry makes a fault never followed by a retry a violation, not just a finding.
	RequireRetry bool
	// KeyPattern, when set, must match every key.
	KeyPattern *regexp.Regexp
	// IgnoreArgs are arguments (dotted paths into objects: "meta.sentAt") left out when calls
	// are compared, for values an agent legitimately changes per attempt.
	IgnoreArgs []string
}

// Finding is one thing the verdict noticed about the agent.
type Finding struct {
	Check Check `json:"check"`
	// Violation is set when the finding fails the verdict.
	Violation bool   `json:"violation"`
	Seq       []int  `json:"seq"`
	Tool      string `json:"tool"`
	Key       string `json:"key,omitempty"`
	Message   string `json:"message"`
}

// Verdict is the judgement of an agent's calls.
type Verdict struct {
	Calls      int       `json:"calls"`
	Mutating   int       `json:"mutating"`
	Faults     int       `json:"faults"`
	Violations int       `json:"violations"`
	Findings   []Finding `json:"findings"`
	// Checked lists the checks that applied (key-pattern only with a pattern).
	Checked []Check `json:"checked"`
}

// Failed reports whether a finding is a violation.
func (v Verdict) Failed() bool { return v.Violations > 0 }

// Judge applies the agent checks to calls in the order the agent sent them. It is pure.
func Judge(calls []trace.Call, opts JudgeOptions) Verdict {
	v := Verdict{Calls: len(calls), Findings: []Finding{}}
	v.Checked = []Check{CheckKeyPresent, CheckRetrySameKey, CheckOneKeyOneCall, CheckRetried}
	if opts.KeyPattern != nil {
		v.Checked = append(v.Checked, CheckKeyPattern)
	}
	add := func(f Finding) {
		if f.Violation {
			v.Violations++
		}
		v.Findings = append(v.Findings, f)
	}
	type first struct {
		seq  int
		sig  string
		tool string
		args string
	}
	byKey := map[string]first{}
	for i, c := range calls {
		if c.Fault != "" {
			v.Faults++
		}
		if !c.Mutating {
			continue
		}
		v.Mutating++
		sig, args := signature(c, opts.IgnoreArgs)
		if c.Key == "" {
			add(Finding{Check: CheckKeyPresent, Violation: true, Seq: []int{c.Seq}, Tool: c.Tool,
				Message: fmt.Sprintf("%s call #%d is mutating and carries no key (%s)", c.Tool, c.Seq, c.KeyCarrier)})
		} else {
			if opts.KeyPattern != nil && !opts.KeyPattern.MatchString(c.Key) {
				add(Finding{Check: CheckKeyPattern, Violation: true, Seq: []int{c.Seq}, Tool: c.Tool, Key: c.Key,
					Message: fmt.Sprintf("%s call #%d: key %q does not match --key-pattern %s", c.Tool, c.Seq, c.Key, opts.KeyPattern)})
			}
			if f, ok := byKey[c.Key]; !ok {
				byKey[c.Key] = first{c.Seq, sig, c.Tool, args}
			} else if f.sig != sig {
				add(Finding{Check: CheckOneKeyOneCall, Violation: true, Seq: []int{f.seq, c.Seq}, Tool: c.Tool, Key: c.Key,
					Message: fmt.Sprintf("key %q covers two different calls: %s #%d %s and %s #%d %s; a server that dedupes on the key rejects or wrongly replays the second",
						c.Key, f.tool, f.seq, args0(f.args), c.Tool, c.Seq, args0(args))})
			}
		}
		if !hidesOutcome(c) || c.Key == "" {
			continue
		}
		// The retry is the next call of the same tool with the same arguments.
		var retry *trace.Call
		for j := i + 1; j < len(calls); j++ {
			if s, _ := signature(calls[j], opts.IgnoreArgs); calls[j].Mutating && s == sig {
				retry = &calls[j]
				break
			}
		}
		what := describeHidden(c)
		switch {
		case retry == nil:
			msg := fmt.Sprintf("outcome left unknown to the agent: %s call #%d (%s) was never retried", c.Tool, c.Seq, what)
			if !opts.RequireRetry {
				msg += " (reported; --require-retry makes it fail)"
			}
			add(Finding{Check: CheckRetried, Violation: opts.RequireRetry, Seq: []int{c.Seq}, Tool: c.Tool, Key: c.Key, Message: msg})
		case retry.Key != c.Key:
			add(Finding{Check: CheckRetrySameKey, Violation: true, Seq: []int{c.Seq, retry.Seq}, Tool: c.Tool, Key: c.Key,
				Message: fmt.Sprintf("would charge twice: %s call #%d (%s) was retried as call #%d with key %q instead of %q",
					c.Tool, c.Seq, what, retry.Seq, retry.Key, c.Key)})
		}
	}
	return v
}

// hidesOutcome reports whether the agent cannot know whether the call took effect: a fault hid
// the answer, or the answer itself was indeterminate.
func hidesOutcome(c trace.Call) bool {
	if c.Fault != "" {
		return !strings.HasPrefix(c.Fault, string(Delay)+":")
	}
	return c.Outcome == "info"
}

func describeHidden(c trace.Call) string {
	answered := "the server executed it"
	if len(c.Result) == 0 && c.Status == 0 {
		answered = "the server never answered and may have executed it"
	}
	switch {
	case c.Fault == string(LoseResponse):
		return "response lost; " + answered
	case c.Fault == string(Timeout):
		return "timed out; " + answered
	case c.Fault != "":
		return "answered " + c.Fault + " by idemtest"
	}
	return "outcome info: " + c.Error
}

// signature identifies a call by tool and arguments, the key argument and ignored arguments
// left out: canonical JSON (object keys sorted, insignificant space dropped).
func signature(c trace.Call, ignore []string) (sig, args string) {
	drop := ignore
	if keyArg, isArg := strings.CutPrefix(c.KeyCarrier, "arg "); isArg {
		drop = append([]string{keyArg}, ignore...)
	}
	args = canonical(c.Args, drop)
	return c.Tool + "\x00" + args, args
}

func canonical(raw json.RawMessage, drop []string) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return string(raw)
	}
	return verdict.Canonical(verdict.Without(v, drop))
}

// args0 shortens arguments for a message.
func args0(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}
