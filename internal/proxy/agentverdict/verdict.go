package agentverdict

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/proxy/fault"
	"github.com/idemtest/idemtest/internal/trace"
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
	// Error, when set, is why no verdict can stand: the tool server ended while the agent was
	// connected or never answered its initialize request, or the agent's session never got
	// going.
	Error string `json:"error,omitempty"`
	// Stopped, set with Error, is where an agent session that never got going stopped (the
	// agent connected but its MCP handshake did not complete): a stage id of proxy's
	// SessionError. Empty when the tool server failed the agent.
	Stopped string `json:"stopped,omitempty"`
	// Notes are what the proxy could not pass on or judge: messages it dropped at its line
	// cap.
	Notes []string `json:"notes,omitempty"`
}

// Failed reports whether a finding is a violation or the session failed.
func (v Verdict) Failed() bool { return v.Violations > 0 || v.Error != "" }

// Nothing reports why nothing was judged, "" when something was: a session without a mutating
// call checks no key.
func (v Verdict) Nothing() string {
	switch {
	case v.Calls == 0:
		return "the agent made no tool call"
	case v.Mutating == 0:
		return fmt.Sprintf("the agent made no mutating tool call (%d read-only)", v.Calls)
	}
	return ""
}

// Result is the verdict in a word: "fail" (a violation), "error" (the session failed),
// "nothing-judged" or "pass".
func (v Verdict) Result() string {
	switch {
	case v.Violations > 0:
		return "fail"
	case v.Error != "":
		return "error"
	case v.Nothing() != "":
		return "nothing-judged"
	}
	return "pass"
}

// Judge applies the agent checks to calls in the order the agent sent them. It is pure.
func Judge(calls []trace.Call, opts JudgeOptions) Verdict {
	v, _ := JudgeContext(context.Background(), calls, opts)
	return v
}

// ctxEvery is how many calls the verdict judges between two looks at its context.
const ctxEvery = 1 << 10

// JudgeContext is Judge that gives up when ctx ends, returning its error. Each call's
// arguments are decoded once: the verdict is near-linear in the number of calls.
func JudgeContext(ctx context.Context, calls []trace.Call, opts JudgeOptions) (Verdict, error) {
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
	ix, err := newIndex(ctx, calls, opts.IgnoreArgs)
	if err != nil {
		return v, err
	}
	type first struct {
		seq  int
		sig  string
		tool string
		args string
	}
	byKey := map[string]first{}
	for i, c := range calls {
		if i%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return v, err
			}
		}
		if c.Fault != "" {
			v.Faults++
		}
		if !c.Mutating {
			continue
		}
		v.Mutating++
		sig, args := ix.sig[i], ix.args[i]
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
		retry, differ := ix.findRetry(calls, i)
		what := describeHidden(c)
		switch {
		case retry == nil:
			msg := fmt.Sprintf("outcome left unknown to the agent: %s call #%d (%s) was never retried", c.Tool, c.Seq, what)
			if !opts.RequireRetry {
				msg += " (reported; --require-retry makes it fail)"
			}
			add(Finding{Check: CheckRetried, Violation: opts.RequireRetry, Seq: []int{c.Seq}, Tool: c.Tool, Key: c.Key, Message: msg})
		case retry.Key != c.Key:
			msg := fmt.Sprintf("would charge twice: %s call #%d (%s) was retried as call #%d with key %q instead of %q",
				c.Tool, c.Seq, what, retry.Seq, retry.Key, c.Key)
			if len(differ) > 0 {
				msg += " (the retry's arguments differ only in: " + strings.Join(differ, ", ") + ")"
			}
			add(Finding{Check: CheckRetrySameKey, Violation: true, Seq: []int{c.Seq, retry.Seq}, Tool: c.Tool, Key: c.Key, Message: msg})
		}
	}
	return v, nil
}

// index holds what the verdict compares calls by, computed once per call: the signature and
// canonical arguments of each mutating call, and where each tool's and each signature's
// mutating calls are (positions in calls, ascending).
type index struct {
	sig, args []string
	// obj are the arguments of each mutating call as an object (nil when they are not one).
	obj    []map[string]any
	byTool map[string][]int
	bySig  map[string][]int
}

func newIndex(ctx context.Context, calls []trace.Call, ignore []string) (*index, error) {
	ix := &index{sig: make([]string, len(calls)), args: make([]string, len(calls)), obj: make([]map[string]any, len(calls)),
		byTool: map[string][]int{}, bySig: map[string][]int{}}
	for i, c := range calls {
		if i%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if !c.Mutating {
			continue
		}
		v, ok := decodeArgs(c, ignore)
		ix.sig[i], ix.args[i] = sigOf(c, v, ok)
		ix.obj[i], _ = v.(map[string]any)
		ix.byTool[c.Tool] = append(ix.byTool[c.Tool], i)
		ix.bySig[ix.sig[i]] = append(ix.bySig[ix.sig[i]], i)
	}
	return ix, nil
}

// after is the first position in list (ascending) past i, or -1.
func after(list []int, i int) int {
	k := sort.SearchInts(list, i+1)
	if k == len(list) {
		return -1
	}
	return list[k]
}

// findRetry finds the retry of calls[i], a mutating call whose outcome the agent does not know.
// The retry is the first later mutating call of the same tool with the same arguments (compared
// as canonical JSON: numbers by value, the key and ignored arguments left out). The next call of
// that tool is also its retry when the agent regenerated the arguments: every argument both
// calls carry has an equal value and one call's arguments include all of the other's, so that
// the only differences are arguments added or dropped (an optional field spelled out with the
// server's default, say). differ names those arguments, sorted; it is empty for an exact
// retry. A call that changes an argument's value (another amount) is a new call, not a retry.
func (ix *index) findRetry(calls []trace.Call, i int) (retry *trace.Call, differ []string) {
	same := after(ix.bySig[ix.sig[i]], i)
	next := after(ix.byTool[calls[i].Tool], i)
	if next >= 0 && next != same && ix.obj[i] != nil && ix.obj[next] != nil {
		if d, ok := addedOrDropped(ix.obj[i], ix.obj[next]); ok {
			return &calls[next], d
		}
	}
	if same >= 0 {
		return &calls[same], nil
	}
	return nil, nil
}

// regenerated reports whether b's arguments differ from a's only by top-level arguments one of
// them left out (at least one argument in common), and names those arguments.
func regenerated(a, b trace.Call, ignore []string) ([]string, bool) {
	am, aok := argMap(a, ignore)
	bm, bok := argMap(b, ignore)
	if !aok || !bok {
		return nil, false
	}
	return addedOrDropped(am, bm)
}

// addedOrDropped is regenerated on the decoded arguments.
func addedOrDropped(am, bm map[string]any) ([]string, bool) {
	var onlyA, onlyB []string
	shared := 0
	for k, av := range am {
		bv, ok := bm[k]
		switch {
		case !ok:
			onlyA = append(onlyA, k)
		case jsonvalue.Canonical(av) != jsonvalue.Canonical(bv):
			return nil, false
		default:
			shared++
		}
	}
	for k := range bm {
		if _, ok := am[k]; !ok {
			onlyB = append(onlyB, k)
		}
	}
	if shared == 0 || len(onlyA) > 0 && len(onlyB) > 0 {
		return nil, false
	}
	d := append(onlyA, onlyB...)
	sort.Strings(d)
	return d, true
}

// hidesOutcome reports whether the agent cannot know whether the call took effect: a fault hid
// the answer, or the answer itself was indeterminate.
func hidesOutcome(c trace.Call) bool {
	if c.Fault != "" {
		return !strings.HasPrefix(c.Fault, string(fault.Delay)+":")
	}
	return c.Outcome == "info"
}

func describeHidden(c trace.Call) string {
	answered := "the server executed it"
	if len(c.Result) == 0 && c.Status == 0 {
		answered = "the server never answered and may have executed it"
	}
	switch {
	case c.Fault == string(fault.LoseResponse):
		return "response lost; " + answered
	case c.Fault == string(fault.Timeout):
		return "timed out; " + answered
	case c.Fault != "":
		return "answered " + c.Fault + " by idemtest"
	}
	return "outcome info: " + c.Error
}

// Signature identifies a call by tool and arguments as the retry rule compares them (see
// signature); idemtest audit applies the same rule to production calls.
func Signature(c trace.Call, ignore []string) (sig, args string) { return signature(c, ignore) }

// signature identifies a call by tool and arguments, the key argument and ignored arguments
// left out: canonical JSON (object keys sorted, insignificant space dropped, numbers by value:
// 10, 10.0 and 1e1 are one number).
func signature(c trace.Call, ignore []string) (sig, args string) {
	v, ok := decodeArgs(c, ignore)
	return sigOf(c, v, ok)
}

// sigOf is the signature of c, whose arguments decoded as v (ok false when they did not).
func sigOf(c trace.Call, v any, ok bool) (sig, args string) {
	if !ok {
		args = string(c.Args)
	} else {
		args = jsonvalue.Canonical(v)
	}
	return c.Tool + "\x00" + args, args
}

// argMap returns a call's arguments as an object, the key and ignored arguments left out.
func argMap(c trace.Call, ignore []string) (map[string]any, bool) {
	v, ok := decodeArgs(c, ignore)
	m, isMap := v.(map[string]any)
	return m, ok && isMap
}

// decodeArgs decodes a call's arguments with every number in its canonical spelling, the key
// argument and ignored arguments left out. Absent arguments are an empty object.
func decodeArgs(c trace.Call, ignore []string) (any, bool) {
	drop := ignore
	if keyArg, isArg := strings.CutPrefix(c.KeyCarrier, "arg "); isArg {
		drop = append([]string{keyArg}, ignore...)
	}
	if len(bytes.TrimSpace(c.Args)) == 0 {
		return map[string]any{}, true
	}
	d := json.NewDecoder(bytes.NewReader(c.Args))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil, false
	}
	return jsonvalue.Without(normNumbers(v), drop), true
}

// normNumbers is v (decoded with UseNumber) with every number in its canonical spelling.
func normNumbers(v any) any {
	return jsonvalue.Map(v, func(leaf any) any {
		if n, ok := leaf.(json.Number); ok {
			return json.Number(normNumber(string(n)))
		}
		return leaf
	})
}

// normNumber spells a JSON number so that equal values are equal text, exactly (no float
// rounding: two large integer ids stay apart): 10.0, 1e1 and 10 are "10"; 12.50 is "12.5";
// -0 is "0". Very large or small exponents keep an exponent: 1e30 is "1e30".
func normNumber(s string) string {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 1<<20 || e < -(1<<20) {
			return s
		}
		mant, exp = s[:i], e
	}
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	if whole, frac, ok := strings.Cut(mant, "."); ok {
		mant, exp = whole+frac, exp-len(frac)
	}
	mant = strings.TrimLeft(mant, "0")
	if mant == "" {
		return "0"
	}
	for strings.HasSuffix(mant, "0") {
		mant, exp = mant[:len(mant)-1], exp+1
	}
	var out string
	switch {
	case exp >= 0 && exp <= 20:
		out = mant + strings.Repeat("0", exp)
	case exp < 0 && -exp < len(mant):
		out = mant[:len(mant)+exp] + "." + mant[len(mant)+exp:]
	case exp < 0 && -exp-len(mant) <= 6:
		out = "0." + strings.Repeat("0", -exp-len(mant)) + mant
	default:
		out = mant + "e" + strconv.Itoa(exp)
	}
	if neg {
		out = "-" + out
	}
	return out
}

// args0 shortens arguments for a message.
func args0(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}
