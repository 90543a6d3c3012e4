package check

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/check/spec"
	"github.com/idemtest/idemtest/internal/check/state"
	"github.com/idemtest/idemtest/internal/check/synth"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
)

// The checks, by stable id, in matrix order.
const (
	Replay          = "replay"
	LostResponse    = "lost-response"
	Concurrent      = "concurrent"
	PayloadMismatch = "payload-mismatch"
	DistinctKeys    = "distinct-keys"
	MissingKey      = "missing-key"
	Annotations     = "annotations"
)

// IDs lists every check id in matrix order (the ids of checks_keys.go are defined there).
var IDs = []string{Replay, LostResponse, TimeoutRetry, Concurrent, PayloadMismatch, MismatchInFlight, DistinctKeys, KeyScope, MissingKey, ErrorsNotReplayed, Expiry, Annotations}

// Status is a cell's verdict.
type Status string

const (
	Pass         Status = "pass"
	Fail         Status = "fail"
	Warn         Status = "warn" // protocol deviation: safe, but not the profile's status code
	Skip         Status = "skip"
	Inconclusive Status = "inconclusive"
)

// Symbol is the matrix glyph of a status.
func (s Status) Symbol() string {
	return map[Status]string{Pass: "✓", Fail: "✗", Warn: "⚠", Skip: "–", Inconclusive: "?"}[s]
}

// Profiles name the status codes a check expects.
var Profiles = []string{"ietf", "stripe", "lenient"}

// profile is what a profile expects of a rejected call, by situation.
type profile struct {
	name                      string
	missing, mismatch, flight int // 0: any 4xx
}

func profileOf(name string) (profile, error) {
	switch name {
	case "", "ietf":
		return profile{"ietf", 400, 422, 409}, nil
	case "stripe":
		return profile{"stripe", 400, 400, 409}, nil
	case "lenient":
		return profile{name: "lenient"}, nil
	}
	return profile{}, fmt.Errorf("unknown profile %q: use ietf, stripe or lenient", name)
}

// Options control a battery.
type Options struct {
	// Endpoint names the endpoint of the base scenario to check.
	Endpoint string
	// Tools and SkipTools select tools by name (all mutating tools when Tools is empty).
	Tools, SkipTools []string
	// Only and Skip select checks by id.
	Only, Skip []string
	Profile    string
	// Rounds and Budget bound the concurrent check per tool: it stops at the first double
	// execution, after Rounds fan-outs or when Budget is spent, whichever comes first.
	Rounds int
	Budget time.Duration
	// Fanout is the copies of each concurrent round (default 8).
	Fanout int
	// OnCell, when set, is told about each cell as it is decided.
	OnCell func(tool string, c *Cell)
	// OnEvent, when set, is told as the services start, become ready and stop.
	OnEvent func(runner.Event)
}

// Cell is one check of one tool.
type Cell struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Reason is one line: why the cell is what it is.
	Reason string `json:"reason,omitempty"`
	// Evidence names what decided: "answers" (the exactly-once verdict, DESIGN §8), "status".
	Evidence string `json:"evidence,omitempty"`
	// Details explain a cell that is not ✓: the failure and the call history.
	Details []string `json:"details,omitempty"`
	// Rounds, Overlapped and the spread describe the concurrent check.
	Rounds      int     `json:"rounds,omitempty"`
	Overlapped  int     `json:"overlapped,omitempty"`
	SpreadP50US float64 `json:"spread_p50_us,omitempty"`
	SpreadMaxUS float64 `json:"spread_max_us,omitempty"`
	// Replayed reports that the server replayed a stored answer in this check.
	Replayed bool          `json:"replayed,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// replaysDiffer is set when a marked replay differed from the stored answer.
	replaysDiffer bool
	// Scenario is what ran (nil when the check was skipped before building one).
	Scenario *spec.Spec `json:"-"`
	// plan is how the battery ran it.
	plan *plan
}

// Row is one tool's cells, in the order of Report.Checks.
type Row struct {
	Tool string `json:"tool"`
	// Skipped is why the whole tool was left out ("" when it was checked).
	Skipped string  `json:"skipped,omitempty"`
	Natural bool    `json:"natural,omitempty"`
	Args    any     `json:"args,omitempty"`
	Cells   []*Cell `json:"cells"`
}

// Report is a battery's outcome.
type Report struct {
	Endpoint string   `json:"endpoint"`
	Profile  string   `json:"profile"`
	Checks   []string `json:"checks"`
	Rows     []*Row   `json:"tools"`
	// Diagnoses are whole-server findings, printed above the matrix.
	Diagnoses []string      `json:"diagnoses,omitempty"`
	Start     time.Time     `json:"start"`
	Duration  time.Duration `json:"duration_ns"`
	// Interrupted is set when the battery was cancelled before the end.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Failed reports whether any cell is ✗.
func (r *Report) Failed() bool {
	for _, row := range r.Rows {
		for _, c := range row.Cells {
			if c.Status == Fail {
				return true
			}
		}
	}
	return false
}

// Specs returns the scenarios the battery ran, tool by tool.
func (r *Report) Specs() []*spec.Spec {
	var out []*spec.Spec
	for _, row := range r.Rows {
		for _, c := range row.Cells {
			if c.Scenario != nil {
				out = append(out, c.Scenario)
			}
		}
	}
	return out
}

// Run starts what the endpoint of base needs, finds its mutating tools exactly as run does, and
// runs the battery on each through the runner, one ordinary scenario per check.
func Run(ctx context.Context, base *scenario.Scenario, opts Options) (*Report, error) {
	prof, err := profileOf(opts.Profile)
	if err != nil {
		return nil, err
	}
	checks, err := selectChecks(opts.Only, opts.Skip)
	if err != nil {
		return nil, err
	}
	if opts.Rounds <= 0 {
		opts.Rounds = 20
	}
	if opts.Budget <= 0 {
		opts.Budget = 2 * time.Second
	}
	if opts.Fanout < 2 {
		opts.Fanout = 8
	}
	def := base.Endpoints[opts.Endpoint]
	if def == nil {
		return nil, fmt.Errorf("no endpoint %q", opts.Endpoint)
	}
	cfg := base.Check
	if cfg == nil {
		cfg = &scenario.CheckConfig{MissingKey: "reject", Tools: map[string]*scenario.CheckTool{}}
	}
	rep := &Report{Endpoint: opts.Endpoint, Profile: prof.name, Checks: checks, Start: time.Now()}
	defer func() { rep.Duration = time.Since(rep.Start) }()

	env, err := runner.StartWith(ctx, []*scenario.Scenario{base}, opts.OnEvent)
	if err != nil {
		return nil, err
	}
	defer env.Close()
	tools, err := listTools(ctx, env, base, def, cfg)
	if err != nil {
		return nil, err
	}
	target := "http://127.0.0.1:9"
	if urls := env.SinkURLs(base); len(urls) > 0 {
		names := make([]string, 0, len(urls))
		for n := range urls {
			names = append(names, n)
		}
		sort.Strings(names)
		target = urls[names[0]]
	}
	if err := checkNames(opts.Tools, tools, def, cfg); err != nil {
		return nil, err
	}
	b := &battery{ctx: ctx, env: env, base: base, def: def, opts: opts, prof: prof, cfg: cfg, snap: state.Snapshots{Tools: state.SnapshotTools(tools), Ignore: def.Ignore}}
	if err := b.setup(tools, target); err != nil {
		return nil, err
	}
	for _, t := range tools {
		if !t.Mutating || !selected(t.Name, opts.Tools, opts.SkipTools) {
			continue
		}
		row := &Row{Tool: t.Name, Natural: t.Natural}
		rep.Rows = append(rep.Rows, row)
		args, why := b.args(t, target)
		row.Args = args
		if why == "" {
			why = b.skipReason(t)
		}
		if why == "" {
			why = b.probe(t, args)
		}
		if why == "" {
			b.measureEffects(t, args)
		}
		for _, id := range checks {
			if ctx.Err() != nil {
				rep.Interrupted = true
				return rep, nil
			}
			var c *Cell
			if why != "" {
				row.Skipped = strings.ReplaceAll(why, "\n", " ")
				c = &Cell{Check: id, Status: Skip, Reason: why}
			} else {
				start := time.Now()
				c = b.withEffects(b.run(id, t, args))
				c.Duration = time.Since(start)
			}
			oneLine(c)
			row.Cells = append(row.Cells, c)
			if opts.OnCell != nil {
				opts.OnCell(t.Name, c)
			}
		}
	}
	if ctx.Err() != nil {
		rep.Interrupted = true
	}
	rep.Diagnoses = append(diagnose(rep, def), b.x.diagnoses...)
	if len(rep.Rows) == 0 {
		return rep, errors.New("no mutating tool to check (see idemtest tools)")
	}
	return rep, nil
}

// checkNames refuses --tool names that are not mutating tools of the endpoint, and check.tools
// entries that name no tool the server lists (a typo would silently check the tool with
// synthesised arguments instead of the user's).
func checkNames(selected []string, tools []runner.ToolInfo, def *scenario.Endpoint, cfg *scenario.CheckConfig) error {
	var all, mutating []string
	for _, t := range tools {
		all = append(all, t.Name)
		if t.Mutating {
			mutating = append(mutating, t.Name)
		}
	}
	for _, name := range selected {
		if contains(mutating, name) {
			continue
		}
		msg := fmt.Sprintf("--tool %s: endpoint %s has no mutating tool of that name", name, def.Name)
		if c := assert.Closest(name, mutating); c != "" && !contains(all, name) {
			return &ConfigError{fmt.Sprintf("%s; did you mean %s?", msg, c)}
		}
		if contains(all, name) {
			msg += " (it is read-only, as idemtest tools shows)"
		}
		return &ConfigError{fmt.Sprintf("%s; its mutating tools: %s", msg, strings.Join(mutating, ", "))}
	}
	if def.MCP == nil && def.HTTP.OpenAPI == nil {
		return nil // a plain HTTP endpoint's check.tools names its tools
	}
	names := make([]string, 0, len(cfg.Tools))
	for n := range cfg.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		if contains(all, n) {
			continue
		}
		msg := fmt.Sprintf("%s: check.tools.%s: endpoint %s has no tool of that name", cfg.Tools[n].Pos, n, def.Name)
		if c := assert.Closest(n, all); c != "" {
			msg += fmt.Sprintf("; did you mean %s?", c)
		} else {
			msg += "; its tools: " + strings.Join(all, ", ")
		}
		errs = append(errs, errors.New(msg))
	}
	if len(errs) > 0 {
		return &ConfigError{errors.Join(errs...).Error()}
	}
	return nil
}

func selectChecks(only, skip []string) ([]string, error) {
	for _, id := range append(append([]string(nil), only...), skip...) {
		if !contains(IDs, id) {
			return nil, fmt.Errorf("unknown check %q; checks: %s", id, strings.Join(IDs, ", "))
		}
	}
	var out []string
	for _, id := range IDs {
		if (len(only) == 0 || contains(only, id)) && !contains(skip, id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--only and --skip leave no check to run")
	}
	return out, nil
}

func selected(tool string, only, skip []string) bool {
	return (len(only) == 0 || contains(only, tool)) && !contains(skip, tool)
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// listTools is the endpoint's tools as idemtest tools shows them; a plain HTTP endpoint without
// a mutating list takes its tools from the check: section.
func listTools(ctx context.Context, env *runner.Env, base *scenario.Scenario, def *scenario.Endpoint, cfg *scenario.CheckConfig) ([]runner.ToolInfo, error) {
	if def.MCP == nil && def.Mutating == nil && def.HTTP.OpenAPI == nil {
		names := make([]string, 0, len(cfg.Tools))
		for n := range cfg.Tools {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) == 0 {
			return nil, fmt.Errorf("endpoint %s is plain HTTP and cannot list its tools: name them under mutating: on the endpoint or under check: {tools: {NAME: {args: {…}}}}", def.Name)
		}
		var out []runner.ToolInfo
		for _, n := range names {
			info := runner.ToolInfo{Mutating: runner.Mutating(def, n, nil), Natural: runner.Natural(def, n, nil)}
			info.Name = n
			out = append(out, info)
		}
		return out, nil
	}
	return env.Tools(ctx, base, def.Name)
}

// args are the tool's arguments: check.tools.NAME.args, else built from the input schema. A
// non-empty reason says why the tool is skipped.
func (b *battery) args(t runner.ToolInfo, target string) (map[string]any, string) {
	if ct := b.cfg.Tools[t.Name]; ct != nil {
		if ct.Skip != "" {
			return nil, "skipped in the config: " + ct.Skip
		}
		if ct.Args != nil {
			m, _ := spec.PlainArgs(ct.Args).(map[string]any)
			return m, ""
		}
	}
	if t.InputSchema == nil {
		if b.def.MCP != nil {
			return map[string]any{}, ""
		}
		return nil, fmt.Sprintf("no input schema and no arguments: give them under check: {tools: {%s: {args: {…}}}}", t.Name)
	}
	args, err := synth.Synthesize(t.InputSchema, b.def.Key.Arg, target)
	if err != nil {
		return nil, err.Error()
	}
	return args, ""
}

// diagnose finds whole-server patterns: no keyed tool ever replayed.
func diagnose(rep *Report, def *scenario.Endpoint) []string {
	judged, replayed := 0, 0
	for _, row := range rep.Rows {
		if row.Natural || row.Skipped != "" {
			continue
		}
		for _, c := range row.Cells {
			if c.Check != Replay && c.Check != LostResponse {
				continue
			}
			if c.Status == Pass || c.Status == Fail || c.Status == Warn {
				judged++
			}
			if c.Replayed {
				replayed++
			}
		}
	}
	var out []string
	for _, row := range rep.Rows {
		for _, c := range row.Cells {
			if c.replaysDiffer {
				out = append(out, "answers marked as replays differ from the stored answer: if a field changes on every answer (a request id, a timestamp), leave it out with compare: {ignore: [PATH]} on the endpoint")
				break
			}
		}
		if len(out) > 0 {
			break
		}
	}
	if judged == 0 || replayed > 0 {
		return out
	}
	return append(out, fmt.Sprintf("no tool replayed anything: keys look unsupported (the key went in the %s)", keyWhere(def)))
}

// keyWhere names where the endpoint's calls carry the key: "argument idempotencyKey".
func keyWhere(def *scenario.Endpoint) string {
	switch {
	case def.Key.Arg != "":
		return "argument " + def.Key.Arg
	case def.Key.Meta != "":
		return "_meta entry " + def.Key.Meta
	}
	return "header " + def.Key.Header
}

// AllSkipped reports whether every cell of every tool was skipped: no tool could be judged.
func (r *Report) AllSkipped() bool {
	for _, row := range r.Rows {
		for _, c := range row.Cells {
			if c.Status != Skip {
				return false
			}
		}
	}
	return len(r.Rows) > 0
}

// skipReason says why a tool cannot be checked at all: it needs a protocol feature idemtest
// lacks.
func (b *battery) skipReason(t runner.ToolInfo) string {
	if t.TaskSupport == "required" {
		return "needs MCP tasks, which idemtest does not support (tools/list says execution.taskSupport: required)"
	}
	return ""
}
