package rig

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/check/synth"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/stateview"
	"github.com/idemtest/idemtest/internal/toolset"
)

// Rig runs the battery's scenarios on the tools of one endpoint, on one started environment,
// and keeps what it measured of the tool being checked.
type Rig struct {
	// Ctx bounds every run, and the concurrent check's rounds.
	Ctx context.Context
	// Def is the endpoint checked.
	Def *scenario.Endpoint
	// Config is the check: section (never nil).
	Config *scenario.CheckConfig
	Opts   Options
	// Snap are the read-only calls whose answers are the server's state, read before and after.
	Snap stateview.Snapshots
	// OneCall is how one call of the current tool changes the snapshot tools' answers (empty:
	// no state evidence).
	OneCall stateview.Delta

	env  *runner.Env
	base *scenario.Scenario
	// perCall is what one execution of the current tool sends to each sink that hears from it
	// (nil: no sink evidence).
	perCall map[string]int
	// SkipOutput is what the services wrote during the plain call that skipped the current
	// tool, as lines under its row.
	SkipOutput []string
	// x is what the rig learns across tools.
	x extras
}

// extras is what the checks need beyond one tool: the other tools (key-scope borrows one),
// where a synthesised uri points, and what was learnt about each tool.
type extras struct {
	tools  []toolset.ToolInfo
	target string
	// latency is the shortest execution of a tool seen so far (timeout-retry and
	// mismatch-in-flight give up at half of it).
	latency map[string]time.Duration
	// effects is the validated effects expression of each tool (check.tools.NAME.effects).
	effects map[string]string
	// works says whether a tool's plain call with its arguments succeeded (key-scope partners).
	works map[string]bool
	// diagnoses are whole-server findings (a declared effects expression left out), printed
	// above the matrix.
	diagnoses []string
	// instances is the most instances of the endpoint any call went to (0: one instance).
	instances int
}

// Options are what the checks take of the command line (check.Options).
type Options struct {
	// Rounds (0: no cap), Budget and Fanout bound the concurrent check; Budget also bounds the
	// give-up points the in-flight checks try.
	Rounds int
	Budget time.Duration
	Fanout int
	// Only are the checks asked for by name: expiry waits out a long key_ttl only then.
	Only []string
	// Tools and SkipTools select tools: key-scope borrows no tool SkipTools leaves out, and
	// prefers the selected ones.
	Tools, SkipTools []string
}

// Target is what a battery checks: an endpoint of base, on an environment already started.
type Target struct {
	Env    *runner.Env
	Base   *scenario.Scenario
	Def    *scenario.Endpoint
	Config *scenario.CheckConfig
	// Tools are the endpoint's tools, mutating or not.
	Tools []toolset.ToolInfo
	// URL is where a synthesised uri argument points: a loopback sink, so nothing leaves the
	// machine.
	URL string
	// Snapshots are the state reads: check.snapshot, else the read-only tools without arguments.
	Snapshots stateview.Snapshots
}

// New is a rig on target.
func New(ctx context.Context, target Target, opts Options) *Rig {
	return &Rig{Ctx: ctx, env: target.Env, base: target.Base, Def: target.Def, Opts: opts,
		Config: target.Config, Snap: target.Snapshots, x: extras{tools: target.Tools, target: target.URL}}
}

// Prepare readies the battery for tool t: its arguments and one plain call of it, which tells
// what one execution sends to the sinks and changes in the state, and whether the declared
// effects count it. A non-empty reason says why the tool cannot be checked: every cell of its
// row is skipped with it.
func (b *Rig) Prepare(t toolset.ToolInfo) (args map[string]any, why string) {
	args, why = b.args(t)
	if why == "" {
		why = b.skipReason(t)
	}
	b.SkipOutput = nil
	if why == "" {
		why = b.probe(t, args)
	}
	if why == "" {
		b.measureEffects(t, args)
	}
	return args, why
}

// Diagnoses are the whole-server findings of the checks (a declared effects expression that
// could not be used), printed above the matrix.
func (b *Rig) Diagnoses() []string { return b.x.diagnoses }

// Instances is how many instances of the endpoint the checks' calls reached: 0 for an endpoint
// of one instance, else the highest instance number seen.
func (b *Rig) Instances() int { return b.x.instances }

// args are the tool's arguments: check.tools.NAME.args, else built from the input schema. A
// non-empty reason says why the tool is skipped.
func (b *Rig) args(t toolset.ToolInfo) (map[string]any, string) {
	if ct := b.Config.Tools[t.Name]; ct != nil {
		if ct.Skip != "" {
			return nil, "skipped in the config: " + ct.Skip
		}
		if ct.Args != nil {
			m, _ := scenariogen.PlainArgs(ct.Args).(map[string]any)
			return m, ""
		}
	}
	if t.InputSchema == nil {
		if b.Def.MCP != nil {
			return map[string]any{}, ""
		}
		return nil, fmt.Sprintf("no input schema and no arguments: give them under check: {tools: {%s: {args: {…}}}}", t.Name)
	}
	args, err := synth.Synthesize(t.InputSchema, b.Def.Key.Arg, b.x.target)
	if err != nil {
		return nil, err.Error()
	}
	return args, ""
}

// skipReason says why a tool cannot be checked at all: it needs a protocol feature idemtest
// lacks.
func (b *Rig) skipReason(t toolset.ToolInfo) string {
	if t.TaskSupport == "required" {
		return "needs MCP tasks, which idemtest does not support (tools/list says execution.taskSupport: required)"
	}
	return ""
}

// KeyWhere names where the endpoint's calls carry the key: "argument idempotencyKey".
func KeyWhere(def *scenario.Endpoint) string {
	switch {
	case def.Key.Arg != "":
		return "argument " + def.Key.Arg
	case def.Key.Meta != "":
		return "_meta entry " + def.Key.Meta
	}
	return "header " + def.Key.Header
}

// probe calls the tool once, plainly, before the battery, and records what one execution sends
// to each sink. A tool that does not work with its arguments cannot be judged: the returned
// reason, when not empty, skips its row instead of reporting failures the tool would have on any
// call.
func (b *Rig) probe(t toolset.ToolInfo, args map[string]any) string {
	b.perCall, b.OneCall = nil, nil
	s := b.NewPlan(t, "probe", "one call", b.Snap.AroundOne(scenariogen.Step{ID: "probe", CallTool: t.Name, Args: args, Expect: "any"})...)
	res, err := b.Exec(s)
	if err != nil {
		return "a plain call could not run: " + err.Error()
	}
	b.SkipOutput = s.OutputLines()
	rs := explain.Calls(explain.Trial(res), "probe")
	if len(rs) == 0 {
		return "a plain call was not sent"
	}
	r := rs[len(rs)-1]
	fix := "; give working arguments under check: {tools: {" + t.Name + ": {args: …}}}"
	if r.Outcome != outcome.OK && (r.Outcome == outcome.Fail || r.Status >= 400) {
		if why := b.keyRefused(t, args, r); why != "" {
			return why
		}
	}
	switch r.Outcome {
	case outcome.Info:
		if r.Status >= 500 {
			return "a plain call was answered" + explain.StatusNote(r) + answerNote(r) + ", whose outcome is unknown; nothing can be judged without a call that works" + fix
		}
	}
	switch r.Outcome {
	case outcome.Fail:
		if changed, _ := b.Snap.ChangedAt(explain.Trial(res), 0); len(changed) > 0 {
			return "a plain call failed" + explain.StatusNote(r) + ", yet it changed " + strings.Join(changed, ", ") +
				": the tool executes, then reports an error, and an agent retries errors; give arguments on which it succeeds to judge its retries"
		}
		if arg := synth.KeyLike(t.InputSchema, b.Def.Key.Arg); arg != "" {
			return "a plain call with these arguments fails" + explain.StatusNote(r) + "; its input schema declares " + arg +
				", which looks like an idempotency key: if the server reads the key there, set key: {arg: " + arg + "} on the endpoint (idemtest sent it in the " + KeyWhere(b.Def) + ")"
		}
		return "a plain call with these arguments fails" + explain.StatusNote(r) + fix
	case outcome.Info:
		return "a plain call got no answer" + explain.StatusNote(r) + ": the tool hangs or is slower than the call timeout (raise the timeout: of the endpoint's mcp: or http: if it is only slow); nothing can be judged without an answer"
	}
	if d, ok := b.Snap.Change(explain.Trial(res)); ok {
		b.OneCall = d
	}
	if len(b.base.Sinks) == 0 {
		return ""
	}
	for name, n := range b.env.SinkRequests(b.base) {
		if n > 0 {
			if b.perCall == nil {
				b.perCall = map[string]int{}
			}
			b.perCall[name] = n
		}
	}
	return ""
}

// keyRefused tells a server that refuses the key's format apart from one that fails or hangs:
// the plain call's answer mentions the key, or the same call without a key works. The reason
// says so, with the fix (check.key: {format: uuid}); "" when the key is not the cause.
func (b *Rig) keyRefused(t toolset.ToolInfo, args map[string]any, r result.Call) string {
	sent := "idemtest sent " + r.Key + " in the " + KeyWhere(b.Def)
	if !b.Def.Key.Format.IsZero() {
		sent += ", format " + b.Def.Key.Format.String()
	}
	fix := ": the server seems to refuse the key's format (" + sent + "); give the format it wants with check.key: {format: uuid} (or uuidv7, ulid, or a template such as \"ik_{random}\" with a length), or key: {…, format: …} on the endpoint"
	if mentionsKey(r) {
		return "a plain call was refused" + explain.StatusNote(r) + answerNote(r) + ", and the answer is about the key" + fix
	}
	s := b.NewPlan(t, "probe", "one call without a key", scenariogen.Step{ID: "nokey", CallTool: t.Name, Args: args, WithoutKey: true, Expect: "any"})
	res, err := b.Exec(s)
	if err != nil {
		return ""
	}
	b.SkipOutput = append(b.SkipOutput, s.OutputLines()...)
	if rs := explain.Calls(explain.Trial(res), "nokey"); len(rs) > 0 && rs[0].Outcome == outcome.OK {
		return "a plain call was refused" + explain.StatusNote(r) + answerNote(r) + ", but the same call without a key succeeded" + fix
	}
	return ""
}

// maxAnswerNote bounds the server's answer quoted in a skip reason.
const maxAnswerNote = 200

// answerNote quotes a refused call's answer (its error, or its body), clipped: ": invalid
// idempotency key".
func answerNote(r result.Call) string {
	text := answerText(r)
	if text == "" || strings.Contains(explain.StatusNote(r), text) {
		return ""
	}
	if len(text) > maxAnswerNote {
		text = text[:maxAnswerNote] + "…"
	}
	return ": " + strings.ReplaceAll(text, "\n", " ")
}

func answerText(r result.Call) string {
	if r.Error != "" {
		return r.Error
	}
	if r.Result == nil {
		return ""
	}
	if s, ok := r.Result.(string); ok {
		return s
	}
	raw, _ := json.Marshal(r.Result)
	return string(raw)
}

// mentionsKey reports whether a refused call's answer is about its idempotency key.
func mentionsKey(r result.Call) bool {
	text := strings.ToLower(answerText(r))
	return strings.Contains(text, "idempotency") || strings.Contains(text, "idempotent") ||
		strings.Contains(text, "key") && (strings.Contains(text, "invalid") || strings.Contains(text, "format") || strings.Contains(text, "malformed") || strings.Contains(text, "uuid"))
}

// Control calls the tool once with a fresh key: a refusal says something about keys only when
// such a call works.
func (b *Rig) Control(t toolset.ToolInfo, args map[string]any) (ok bool, why string) {
	s := b.NewPlan(t, "control", "a call with a fresh key", scenariogen.Step{ID: "control", CallTool: t.Name, Args: args, Expect: "any"})
	res, err := b.Exec(s)
	if err != nil {
		return false, err.Error()
	}
	rs := explain.Calls(explain.Trial(res), "control")
	if len(rs) == 0 {
		return false, "not sent"
	}
	return rs[0].Outcome == outcome.OK, explain.StatusNote(rs[0])
}

// Partner is the mutating tool key-scope sends the borrowed key to: another tool whose plain call
// works with its arguments (--tool does not limit it; --skip-tool and check.tools.NAME.skip do).
func (b *Rig) Partner(t toolset.ToolInfo) (toolset.ToolInfo, map[string]any, bool) {
	var cands []toolset.ToolInfo
	rank := map[string]int{}
	earlier := true
	for _, u := range b.x.tools {
		if u.Name == t.Name {
			earlier = false
			continue
		}
		if !u.Mutating || slices.Contains(b.Opts.SkipTools, u.Name) {
			continue
		}
		// Tools whose rows are done first, so that a tool that works once (a move) is not used
		// up before its own row; then one idempotent by nature, which calling changes least.
		switch {
		case earlier && (len(b.Opts.Tools) == 0 || slices.Contains(b.Opts.Tools, u.Name)) && !u.Natural:
			rank[u.Name] = 0
		case u.Natural:
			rank[u.Name] = 1
		default:
			rank[u.Name] = 2
		}
		cands = append(cands, u)
	}
	sort.SliceStable(cands, func(i, j int) bool { return rank[cands[i].Name] < rank[cands[j].Name] })
	for _, u := range cands {
		a, why := b.args(u)
		if why != "" {
			continue
		}
		// A tool that fails with its arguments anyway would make every refusal look like one of
		// the key: it is tried once, plainly, and left out if it fails.
		works, known := b.x.works[u.Name]
		if !known {
			works, _ = b.Control(u, a)
			if b.x.works == nil {
				b.x.works = map[string]bool{}
			}
			b.x.works[u.Name] = works
		}
		if works {
			return u, a, true
		}
	}
	return toolset.ToolInfo{}, nil, false
}

// GiveUp is the give-up of an in-flight check outside its sweep of give-up points (a scenario
// built on its own): half the tool's shortest execution, at least 1ms.
func (b *Rig) GiveUp(tool string) time.Duration {
	return min(max(b.x.latency[tool]/2, time.Millisecond), 5*time.Second)
}

// Latency is the shortest execution of tool seen so far (0 before any).
func (b *Rig) Latency(tool string) time.Duration { return b.x.latency[tool] }

// noteLatency remembers the shortest execution of a tool seen so far: a call that was answered
// (or whose answer was discarded) and not replayed. The first call of a battery is often slow
// (connections, caches), so the shortest is what an in-flight check can wait for.
func (x *extras) noteLatency(tool string, tr *result.Trial) {
	if tr == nil {
		return
	}
	for _, c := range tr.Calls {
		if c.Tool != tool || c.Copy != 0 || c.Replayed || c.Duration <= 0 || (c.Outcome != outcome.OK && !c.Lost) {
			continue
		}
		if x.latency == nil {
			x.latency = map[string]time.Duration{}
		}
		if l, ok := x.latency[tool]; !ok || c.Duration < l {
			x.latency[tool] = c.Duration
		}
	}
}
