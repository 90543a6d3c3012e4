package agentverdict

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/outcome"
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

// Call is what the verdict keeps of one call: the few fields of its trace line that the checks
// read and a digest of its arguments, so that a session of any length costs a few hundred bytes
// per call (idemtest proxy digests each call as it completes and lets its answer go). Digest
// makes one from a trace line.
type Call struct {
	Seq        int
	Tool       string
	Key        string
	KeyCarrier string
	// Mutating reports whether the tool is treated as mutating (it must carry a key).
	Mutating bool
	// Answered reports whether the server answered the call (a result or a status).
	Answered bool
	Fault    string
	Outcome  outcome.Outcome
	// Error is the call's error when it is outcome info without a fault (the verdict quotes
	// it), empty otherwise.
	Error string
	// Sig identifies the call by tool and canonical arguments (the key and ignored arguments
	// left out): a hash of the text Signature returns.
	Sig [16]byte
	// Args are the canonical arguments as the verdict's messages quote them (at most 120
	// characters).
	Args string
	// fields are the top-level arguments when they are an object: each name with a hash of its
	// canonical value, sorted by name (see encodeFields); empty otherwise.
	fields string
}

// Digest is what the verdict keeps of c, its arguments compared without ignore (dotted paths).
func Digest(c trace.Call, ignore []string) Call { return DigestHiding(c, ignore, nil) }

// DigestHiding is Digest that passes the canonical arguments the verdict quotes through hide
// (when not nil) before it shortens them, so that no part of a secret in them is kept.
func DigestHiding(c trace.Call, ignore []string, hide func(string) string) Call {
	d := Call{Seq: c.Seq, Tool: c.Tool, Key: c.Key, KeyCarrier: c.KeyCarrier, Mutating: c.Mutating,
		Answered: len(c.Result) > 0 || c.Status != 0, Fault: c.Fault, Outcome: c.Outcome}
	if c.Fault == "" && c.Outcome == outcome.Info {
		d.Error = c.Error
	}
	v, ok := decodeArgs(c, ignore)
	sig, args := sigOf(c, v, ok)
	d.Sig = hash128(sig)
	if hide != nil {
		args = hide(args)
	}
	d.Args = args0(args)
	if m, isMap := v.(map[string]any); ok && isMap {
		d.fields = encodeFields(m)
	}
	return d
}

func hash128(s string) [16]byte {
	h := fnv.New128a()
	_, _ = io.WriteString(h, s)
	var out [16]byte
	h.Sum(out[:0])
	return out
}

// encodeFields encodes an object's members, sorted by name, each as the name's length (uvarint),
// the name, and the 64-bit FNV-1a hash of the member's canonical value.
func encodeFields(m map[string]any) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	var b []byte
	for _, k := range names {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		h := fnv.New64a()
		_, _ = io.WriteString(h, jsonvalue.Canonical(m[k]))
		b = binary.BigEndian.AppendUint64(b, h.Sum64())
	}
	return string(b)
}

type field struct {
	name string
	hash uint64
}

func decodeFields(s string) []field {
	var out []field
	b := []byte(s)
	for len(b) > 0 {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n+8 {
			return out
		}
		name := string(b[w : w+int(n)])
		b = b[w+int(n):]
		out = append(out, field{name, binary.BigEndian.Uint64(b)})
		b = b[8:]
	}
	return out
}

// ctxEvery is how many calls the verdict judges between two looks at its context.
const ctxEvery = 1 << 10

// Judge applies the agent checks to calls in the order the agent sent them, and gives up when
// ctx ends, returning its error (the only error it has). Each call's arguments are decoded
// once: the verdict is near-linear in the number of calls.
func Judge(ctx context.Context, calls []trace.Call, opts JudgeOptions) (Verdict, error) {
	var cs Calls
	for i, c := range calls {
		if i%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return Verdict{Calls: len(calls), Findings: []Finding{}}, err
			}
		}
		cs.Add(Digest(c, opts.IgnoreArgs))
	}
	return JudgeCalls(ctx, &cs, opts)
}

// JudgeCalls is Judge on the calls' digests, sorted into the order the agent sent them;
// their arguments were compared without opts.IgnoreArgs when they were digested.
func JudgeCalls(ctx context.Context, cs *Calls, opts JudgeOptions) (Verdict, error) {
	cs.Sort()
	v := Verdict{Calls: cs.Len(), Findings: []Finding{}}
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
	rs, err := findRetries(ctx, cs)
	if err != nil {
		return v, err
	}
	byKey := make(map[[16]byte]int, v.Calls) // the position of the first call with each key
	for i := range cs.Len() {
		if i%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return v, err
			}
		}
		r := cs.row(i)
		if r.fault != 0 {
			v.Faults++
		}
		if r.flags&flagMutating == 0 {
			continue
		}
		v.Mutating++
		kh, noKey := cs.keyHash(i)
		hidden := !noKey && hidesOutcome(cs.names[r.fault], r.flags&flagInfo != 0)
		var c Call
		if noKey || hidden || opts.KeyPattern != nil {
			c = cs.At(i)
		}
		if noKey {
			add(Finding{Check: CheckKeyPresent, Violation: true, Seq: []int{c.Seq}, Tool: c.Tool,
				Message: fmt.Sprintf("%s call #%d is mutating and carries no key (%s)", c.Tool, c.Seq, c.KeyCarrier)})
			continue
		}
		if opts.KeyPattern != nil && !opts.KeyPattern.MatchString(c.Key) {
			add(Finding{Check: CheckKeyPattern, Violation: true, Seq: []int{c.Seq}, Tool: c.Tool, Key: c.Key,
				Message: fmt.Sprintf("%s call #%d: key %q does not match --key-pattern %s", c.Tool, c.Seq, c.Key, opts.KeyPattern)})
		}
		if j, ok := byKey[kh]; !ok {
			byKey[kh] = i
		} else if f := cs.row(j); f.sig != r.sig || f.tool != r.tool {
			f, c := cs.At(j), cs.At(i)
			add(Finding{Check: CheckOneKeyOneCall, Violation: true, Seq: []int{f.Seq, c.Seq}, Tool: c.Tool, Key: c.Key,
				Message: fmt.Sprintf("key %q covers two different calls: %s #%d %s and %s #%d %s; a server that dedupes on the key rejects or wrongly replays the second",
					c.Key, f.Tool, f.Seq, args0(f.Args), c.Tool, c.Seq, args0(c.Args))})
		}
		if !hidden {
			continue
		}
		retry, differ := rs.find(cs, i)
		what := describeHidden(&c)
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

// retries holds, for each mutating call with a key whose outcome the agent does not know (by
// position), the first later mutating call with the same signature (same) and the first later
// mutating call of the same tool (next), -1 for none. Only those calls are held: a session's
// memory grows with its hidden outcomes, not its calls.
type retries map[int]*[2]int

// findRetries finds same and next for every hidden outcome in one pass over the calls.
func findRetries(ctx context.Context, cs *Calls) (retries, error) {
	rs := retries{}
	type sigTool struct {
		sig  [16]byte
		tool uint32
	}
	waitSig := map[sigTool][]int{}
	waitTool := map[uint32][]int{}
	for j := range cs.Len() {
		if j%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		r := cs.row(j)
		if r.flags&flagMutating == 0 {
			continue
		}
		st := sigTool{r.sig, r.tool}
		if w := waitSig[st]; w != nil {
			for _, i := range w {
				rs[i][0] = j
			}
			delete(waitSig, st)
		}
		if w := waitTool[r.tool]; w != nil {
			for _, i := range w {
				rs[i][1] = j
			}
			delete(waitTool, r.tool)
		}
		if r.keyLen > 0 && hidesOutcome(cs.names[r.fault], r.flags&flagInfo != 0) {
			rs[j] = &[2]int{-1, -1}
			waitSig[st] = append(waitSig[st], j)
			waitTool[r.tool] = append(waitTool[r.tool], j)
		}
	}
	return rs, nil
}

// find is the retry of the ith call, a mutating call whose outcome the agent does not know. The
// retry is the first later mutating call of the same tool with the same arguments (compared
// as canonical JSON: numbers by value, the key and ignored arguments left out). The next call of
// that tool is also its retry when the agent regenerated the arguments: every argument both
// calls carry has an equal value and one call's arguments include all of the other's, so that
// the only differences are arguments added or dropped (an optional field spelled out with the
// server's default, say). differ names those arguments, sorted; it is empty for an exact
// retry. A call that changes an argument's value (another amount) is a new call, not a retry.
func (rs retries) find(cs *Calls, i int) (retry *Call, differ []string) {
	r := rs[i]
	if r == nil {
		return nil, nil
	}
	same, next := r[0], r[1]
	if next >= 0 && next != same {
		_, _, fi := cs.bytes(cs.row(i))
		_, _, fn := cs.bytes(cs.row(next))
		if len(fi) > 0 && len(fn) > 0 {
			if d, ok := addedOrDropped(decodeFields(string(fi)), decodeFields(string(fn))); ok {
				c := cs.At(next)
				return &c, d
			}
		}
	}
	if same >= 0 {
		c := cs.At(same)
		return &c, nil
	}
	return nil, nil
}

// addedOrDropped reports whether b's arguments differ from a's (both encoded, sorted by name)
// only by top-level arguments one of them left out (at least one argument in common), and names
// those arguments.
func addedOrDropped(a, b []field) ([]string, bool) {
	var d []string
	shared := 0
	onlyA, onlyB := false, false
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].name < b[j].name:
			d, onlyA = append(d, a[i].name), true
			i++
		case i == len(a) || b[j].name < a[i].name:
			d, onlyB = append(d, b[j].name), true
			j++
		default:
			if a[i].hash != b[j].hash {
				return nil, false
			}
			shared++
			i++
			j++
		}
	}
	if shared == 0 || onlyA && onlyB {
		return nil, false
	}
	return d, true
}

// hidesOutcome reports whether the agent cannot know whether the call took effect: a fault hid
// the answer, or the answer itself was indeterminate.
func hidesOutcome(f string, info bool) bool {
	if f != "" {
		return !strings.HasPrefix(f, string(fault.Delay)+":")
	}
	return info
}

func describeHidden(c *Call) string {
	answered := "the server executed it"
	if !c.Answered {
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
