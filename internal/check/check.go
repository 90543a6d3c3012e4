package check

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/check/battery"
	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// Options control a battery.
type Options struct {
	// Endpoint names the endpoint of the base scenario to check.
	Endpoint string
	// Tools and SkipTools select tools by name (all mutating tools when Tools is empty).
	Tools, SkipTools []string
	// Only and Skip select checks by id.
	Only, Skip []string
	Profile    string
	// Budget bounds the concurrent check per tool in time: it stops at the first double
	// execution or when Budget is spent; Rounds, when above 0, also caps its fan-outs. The
	// in-flight checks (timeout-retry, mismatch-in-flight) try give-up points for as long.
	Rounds int
	Budget time.Duration
	// Fanout is the copies of each concurrent round (default 8).
	Fanout int
	// ShardK and ShardN, when ShardN is above 0, keep shard ShardK of ShardN of the selected
	// mutating tools, dealt round-robin in the order of their names (runner.InShard), so that
	// every tool is checked by exactly one shard. A shard without a tool is an empty report.
	ShardK, ShardN int
	// OnCell, when set, is told about each cell as it is decided.
	OnCell func(tool string, c *battery.Cell)
	// OnEvent, when set, is told as the services start, become ready and stop.
	OnEvent func(runner.Event)
}

// Row is one tool's cells, in the order of Report.Checks.
type Row struct {
	Tool string `json:"tool"`
	// Skipped is why the whole tool was left out ("" when it was checked).
	Skipped string          `json:"skipped,omitempty"`
	Natural bool            `json:"natural,omitempty"`
	Args    any             `json:"args,omitempty"`
	Cells   []*battery.Cell `json:"cells"`
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
	// Regressions classifies the ✗ cells against --baseline (set by the command).
	Regressions *baseline.Result `json:"regressions,omitempty"`
	// Coverage lists the mutating tools the battery skipped (set by the command with
	// --require-coverage).
	Coverage []result.Coverage `json:"coverage,omitempty"`
	// Shard is which job of a battery split with --shard K/N this is (zero: unsharded).
	Shard result.Shard `json:"shard"`
}

// Failed reports whether any cell is ✗.
func (r *Report) Failed() bool {
	for _, row := range r.Rows {
		for _, c := range row.Cells {
			if c.Status == matrix.Fail {
				return true
			}
		}
	}
	return false
}

// AllSkipped reports whether every cell of every tool was skipped: no tool could be judged.
func (r *Report) AllSkipped() bool {
	for _, row := range r.Rows {
		for _, c := range row.Cells {
			if c.Status != matrix.Skip {
				return false
			}
		}
	}
	return len(r.Rows) > 0
}

// Specs returns the scenarios the battery ran, tool by tool.
func (r *Report) Specs() []*scenariogen.Spec {
	var out []*scenariogen.Spec
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
	prof, err := battery.ProfileOf(opts.Profile)
	if err != nil {
		return nil, err
	}
	checks, err := SelectChecks(opts.Only, opts.Skip)
	if err != nil {
		return nil, err
	}
	opts.Rounds = max(opts.Rounds, 0)
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
	if cfg.Key != nil {
		// check.key shapes the keys of the endpoint checked, for this battery only.
		d := *def
		d.Key.Format = *cfg.Key
		def = &d
		eps := maps.Clone(base.Endpoints)
		eps[opts.Endpoint] = def
		b := *base
		b.Endpoints = eps
		base = &b
	}
	rep := &Report{Endpoint: opts.Endpoint, Profile: prof.Name, Checks: checks, Rows: []*Row{}, Start: time.Now()}
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
	if err := checkNames(opts.Tools, tools, def, cfg); err != nil {
		return nil, err
	}
	snap, err := snapshots(tools, def, cfg)
	if err != nil {
		return nil, err
	}
	b := battery.New(ctx,
		rig.Target{Env: env, Base: base, Def: def, Config: cfg, Tools: tools, URL: sinkURL(env, base), Snapshots: snap},
		rig.Options{Rounds: opts.Rounds, Budget: opts.Budget, Fanout: opts.Fanout, Only: opts.Only, Tools: opts.Tools, SkipTools: opts.SkipTools},
		prof)
	for _, t := range shard(tools, opts) {
		row := &Row{Tool: t.Name, Natural: t.Natural}
		rep.Rows = append(rep.Rows, row)
		args, why := b.Prepare(t)
		row.Args = args
		for _, id := range checks {
			if ctx.Err() != nil {
				rep.Interrupted = true
				return rep, nil
			}
			var c *battery.Cell
			if why != "" {
				row.Skipped = strings.ReplaceAll(why, "\n", " ")
				c = &battery.Cell{Check: id, Status: matrix.Skip, Reason: why, Details: b.SkipOutput}
			} else {
				c = b.Cell(id, t, args)
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
	rep.Diagnoses = append(diagnose(rep, def, b.Instances()), b.Diagnoses()...)
	if len(rep.Rows) == 0 && opts.ShardN == 0 {
		return rep, errors.New("no mutating tool to check (see idemtest tools)")
	}
	return rep, nil
}

// shard is the mutating tools selected by opts, in the endpoint's order, and of them only those
// of opts' shard when it names one (dealt by sorted name: the endpoint's order may vary).
func shard(tools []toolset.ToolInfo, opts Options) []toolset.ToolInfo {
	var out []toolset.ToolInfo
	for _, t := range tools {
		if t.Mutating && selected(t.Name, opts.Tools, opts.SkipTools) {
			out = append(out, t)
		}
	}
	if opts.ShardN == 0 {
		return out
	}
	names := make([]string, 0, len(out))
	for _, t := range out {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	keep := map[string]bool{}
	for i, n := range names {
		if runner.InShard(i, opts.ShardK, opts.ShardN) {
			keep[n] = true
		}
	}
	return slices.DeleteFunc(out, func(t toolset.ToolInfo) bool { return !keep[t.Name] })
}

// sinkURL is where a synthesised uri argument points: the first of the base's sinks, else a
// closed loopback port, so that a tool that fetches stays on the machine.
func sinkURL(env *runner.Env, base *scenario.Scenario) string {
	urls := env.SinkURLs(base)
	if len(urls) == 0 {
		return "http://127.0.0.1:9"
	}
	names := make([]string, 0, len(urls))
	for n := range urls {
		names = append(names, n)
	}
	sort.Strings(names)
	return urls[names[0]]
}

// diagnose finds whole-server patterns: no keyed tool ever replayed. instances is how many
// instances of the endpoint the calls reached (0: one). It names only what the cells observed:
// when every judged retry was refused (a status code decided each), the server does keep its
// keys and only withholds the stored answer (a library that fails its own payload check on
// every retry does); keys "look unsupported" only when a retry executed again; and "a
// per-process store" only when calls of one key executed on two instances while calls of one
// key that reached the same instance were deduplicated there.
func diagnose(rep *Report, def *scenario.Endpoint, instances int) []string {
	judged, replayed, refused, again := 0, 0, 0, 0
	var across, within string
	for _, row := range rep.Rows {
		if row.Natural || row.Skipped != "" {
			continue
		}
		for _, c := range row.Cells {
			a, d := c.Spread()
			if a && across == "" {
				across = row.Tool + " " + c.Check
			}
			if d && within == "" {
				within = row.Tool + " " + c.Check
			}
			if c.Check != battery.Replay && c.Check != battery.LostResponse {
				continue
			}
			if c.Status == matrix.Pass || c.Status == matrix.Fail || c.Status == matrix.Warn {
				judged++
				if c.ByStatusOnly() {
					refused++
				}
				if c.ExecutedAgain() {
					again++
				}
			}
			if c.Replayed {
				replayed++
			}
		}
	}
	var out []string
	if d := replaysDiffer(rep); d != "" {
		out = append(out, d)
	}
	if judged == 0 || replayed > 0 {
		return out
	}
	where := rig.KeyWhere(def)
	switch {
	case refused == judged:
		return append(out, fmt.Sprintf("no tool replayed anything: every retry was refused, so keys are kept (the key went in the %s) but the stored answer is never returned", where))
	case again == 0:
		// The retries that were judged were deduplicated without a marker: nothing says
		// the keys are unsupported.
		return out
	case instances > 1 && across != "" && within != "":
		return append(out, fmt.Sprintf("no tool replayed anything across %d instances: calls of one key executed on two instances (%s) while calls of one key that reached the same instance were deduplicated there (%s): each instance keeps its own keys (a per-process store)", instances, across, within))
	case instances > 1:
		return append(out, fmt.Sprintf("no tool replayed anything across %d instances: retries with the same key executed again (the key went in the %s), and no instance was seen deduplicating a key on its own: keys look unsupported, or kept per instance; spread: same on the endpoint checks one instance and tells the two apart", instances, where))
	}
	return append(out, fmt.Sprintf("no tool replayed anything: keys look unsupported (the key went in the %s)", where))
}

// oneLine keeps a cell's reason and each detail on one line: servers' error messages (an edit
// that did not match, a stack) carry newlines that would break the matrix's layout.
func oneLine(c *battery.Cell) {
	c.Reason = strings.ReplaceAll(c.Reason, "\n", " ")
	for i, l := range c.Details {
		c.Details[i] = strings.ReplaceAll(l, "\n", " ")
	}
}

// replaysDiffer is the diagnosis of answers marked as replays that differ from the stored answer:
// where the state, sinks or effects counted more than one execution, the server executes the
// retry again (and leaving the differing field out would hide it); else a field may change on
// every answer. "" when no replay differed.
func replaysDiffer(rep *Report) string {
	seen := false
	for _, row := range rep.Rows {
		for _, c := range row.Cells {
			if !c.ReplaysDiffer() {
				continue
			}
			if c.CountedExtra() {
				return fmt.Sprintf("answers marked as replays differ from the stored answer, and %s counted more than one execution (%s %s): the server executes the retry again and marks its answer as a replay", c.Evidence[0], row.Tool, c.Check)
			}
			seen = true
		}
	}
	if !seen {
		return ""
	}
	return "answers marked as replays differ from the stored answer: if a field changes on every answer (a request id, a timestamp), leave it out with compare: {ignore: [PATH]} on the endpoint"
}
