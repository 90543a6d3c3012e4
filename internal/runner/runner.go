package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/endpoint/mcp"
	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/proc"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/verdict"
)

// Options control a run.
type Options struct {
	// Parallel is how many scenarios run at once (at least 1).
	Parallel int
	// Trials overrides every scenario's trials when above 0.
	Trials int
	// Session pins the session id: trial 1 uses it as is, trial N uses "<session>-N".
	Session  string
	FailFast bool
	// OnEvent, when set, is told about progress; it is called from several goroutines.
	OnEvent func(Event)
}

// Event is a progress notification.
type Event struct {
	// Kind says what happened; a service's events name it in Service.
	Kind      EventKind
	Service   string
	SlowAfter time.Duration
	Grace     time.Duration
	Scenario  *scenario.Scenario
	Result    *ScenarioResult
	Call      *Call
	Trial     int
	Session   string
}

// EventKind says what an Event reports.
type EventKind string

const (
	// EventScenarioStart: a scenario's first trial starts.
	EventScenarioStart EventKind = "scenario-start"
	// EventScenarioEnd: a scenario is done; Result holds its result.
	EventScenarioEnd EventKind = "scenario-end"
	// EventCall: a call was answered (or not); Call holds it.
	EventCall EventKind = "call"
	// EventTrialEnd: a trial of Scenario ended (Trial is its index).
	EventTrialEnd EventKind = "trial-end"
	// EventServiceStart: a service's process started; it is not ready yet.
	EventServiceStart EventKind = "service-start"
	// EventServiceReady: a service became ready.
	EventServiceReady EventKind = "service-ready"
	// EventServiceStopping: a service was sent SIGTERM.
	EventServiceStopping EventKind = "service-stopping"
	// EventServiceSlowStop: a service is still running SlowAfter after SIGTERM; SIGKILL follows
	// at Grace.
	EventServiceSlowStop EventKind = "service-slow-stop"
)

// Select keeps the scenarios that have one of tags (any when tags is empty) and whose name
// matches run (any when nil).
func Select(list []*scenario.Scenario, tags []string, run *regexp.Regexp) []*scenario.Scenario {
	var out []*scenario.Scenario
	for _, s := range list {
		if run != nil && !run.MatchString(s.Name) {
			continue
		}
		if len(tags) > 0 && !hasAny(s.Tags, tags) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// Shard keeps shard k of n ("k/n", 1-based): the scenarios are dealt round-robin in the order
// they were loaded (files sorted by path), so every scenario is in exactly one shard.
func Shard(list []*scenario.Scenario, spec string) ([]*scenario.Scenario, error) {
	var k, n int
	if _, err := fmt.Sscanf(spec, "%d/%d", &k, &n); err != nil || n < 1 || k < 1 || k > n || fmt.Sprintf("%d/%d", k, n) != spec {
		return nil, fmt.Errorf("%q is not K/N with 1 <= K <= N, such as 2/4", spec)
	}
	var out []*scenario.Scenario
	for i, s := range list {
		if i%n == k-1 {
			out = append(out, s)
		}
	}
	return out, nil
}

func hasAny(have, want []string) bool {
	for _, w := range want {
		for _, h := range have {
			if h == w {
				return true
			}
		}
	}
	return false
}

// Run starts the services, runs the scenarios and stops the services, whatever happens. When
// ctx is cancelled (Ctrl-C) it stops as soon as every running call has returned, and reports
// what finished.
func Run(ctx context.Context, list []*scenario.Scenario, opts Options) *Report {
	start := time.Now()
	env, err := StartWith(ctx, list, opts.OnEvent)
	if err != nil {
		rep := &Report{Start: start, Duration: time.Since(start)}
		if ctx.Err() != nil {
			// The services did not start because of the interrupt: nothing failed.
			rep.Interrupted = true
			rep.Scenarios = notRun(list, opts, Interrupted)
			return rep
		}
		rep.Err = err
		return rep
	}
	defer env.Close()
	return env.Run(ctx, list, opts)
}

// Run runs scenarios on the environment's services, sinks and endpoints; it does not stop them.
// The scenarios' services and sinks must be among those the environment started. Calls to Run
// on one environment are sequential.
func (e *Env) Run(ctx context.Context, list []*scenario.Scenario, opts Options) *Report {
	rep := &Report{Start: time.Now()}
	defer func() { rep.Duration = time.Since(rep.Start) }()
	if opts.Parallel < 1 {
		opts.Parallel = 1
	}
	r := e.r
	r.opts = opts

	rep.Scenarios = notRun(list, opts, Skipped)
	runCtx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	g := new(errgroup.Group)
	g.SetLimit(opts.Parallel)
	for i, sc := range list {
		if runCtx.Err() != nil {
			break
		}
		g.Go(func() error {
			if runCtx.Err() != nil {
				return nil
			}
			res := rep.Scenarios[i]
			r.emit(Event{Kind: EventScenarioStart, Scenario: sc})
			r.scenario(runCtx, sc, res)
			r.emit(Event{Kind: EventScenarioEnd, Scenario: sc, Result: res})
			if opts.FailFast && (res.Status == Failed || res.Status == Errored) {
				stopAll()
			}
			return nil
		})
	}
	_ = g.Wait()
	rep.Interrupted = ctx.Err() != nil
	for _, res := range rep.Scenarios {
		switch {
		case res.Status == Interrupted && !rep.Interrupted:
			// Cut short by --fail-fast, not by the user.
			res.Status = Skipped
		case res.Status == Skipped && rep.Interrupted && res.Start.IsZero():
			// Never started because of the interrupt.
			res.Status = Interrupted
		}
	}
	return rep
}

// notRun is a result per scenario, none of them started.
func notRun(list []*scenario.Scenario, opts Options, status Status) []*ScenarioResult {
	out := make([]*ScenarioResult, len(list))
	for i, sc := range list {
		out[i] = &ScenarioResult{Scenario: sc, Status: status, Trials: trialsOf(sc, opts)}
	}
	return out
}

// TotalTrials is how many trials the scenarios run in all with opts.
func TotalTrials(list []*scenario.Scenario, opts Options) int {
	n := 0
	for _, sc := range list {
		n += trialsOf(sc, opts)
	}
	return n
}

// trialsOf is how many trials sc runs: --trials when given, else the scenario's own.
func trialsOf(sc *scenario.Scenario, opts Options) int {
	if opts.Trials > 0 {
		return opts.Trials
	}
	return sc.Trials
}

type runner struct {
	opts   Options
	svcs   *services
	sinks  *sinks
	probes *probes

	mu        sync.Mutex
	endpoints map[string]endpoint.Endpoint
	// stderr holds the standard error of each stdio MCP server, by the key of its endpoint in
	// endpoints (scenarios that define an endpoint of one name differently have servers, and
	// standard errors, of their own).
	stderr map[string]*proc.Tail
	// listOnly is set when endpoints are built to list their tools, not to call them.
	listOnly bool
}

func (r *runner) emit(ev Event) {
	if r.opts.OnEvent != nil {
		r.opts.OnEvent(ev)
	}
}

func (r *runner) closeEndpoints() {
	for _, ep := range r.endpoints {
		ep.Close()
	}
}

// endpoint builds an endpoint once per run, with its templates resolved.
func (r *runner) endpoint(sc *scenario.Scenario, name string) (endpoint.Endpoint, *scenario.Endpoint, error) {
	def := sc.Endpoints[name]
	env := r.templateEnv(sc)
	allow := endpointAllowHosts(sc, def)
	cacheKey := endpointKey(def, env, allow)
	r.mu.Lock()
	defer r.mu.Unlock()
	if ep, ok := r.endpoints[cacheKey]; ok {
		return ep, def, nil
	}
	rd := endpointRender{name: name, env: env, allow: allow}
	var ep endpoint.Endpoint
	var err error
	if def.MCP != nil {
		var cfg mcp.Config
		if cfg, err = rd.mcpConfig(def); err != nil {
			return nil, def, err
		}
		ep = mcp.New(cfg)
		r.stderr[cacheKey] = cfg.Stderr
	} else if ep, err = r.httpEndpoint(def, rd); err != nil {
		return nil, def, err
	}
	r.endpoints[cacheKey] = ep
	return ep, def, nil
}

// endpointKey says which endpoint of a run a scenario's definition is. Scenarios share an
// endpoint when its definition and what its templates see are the same; a scenario that
// overrides a service the endpoint names gets its own.
func endpointKey(def *scenario.Endpoint, env map[string]any, allow []string) string {
	envKey, _ := json.Marshal(env)
	return fmt.Sprintf("%p %s %q", def, envKey, allow)
}

// endpointRender evaluates the templates of one endpoint definition for a scenario, and checks
// the hosts they name against what the endpoint may reach.
type endpointRender struct {
	name  string
	env   map[string]any
	allow []string
}

func (rd endpointRender) str(t *assert.Template, what string) (string, error) {
	v, err := t.Eval(rd.env)
	if err != nil {
		return "", fmt.Errorf("endpoint %s: %s: %w", rd.name, what, err)
	}
	return assert.Text(v), nil
}

func (rd endpointRender) strs(m map[string]*assert.Template, what string) (map[string]string, error) {
	out := map[string]string{}
	for k, t := range m {
		v, err := rd.str(t, what+" "+k)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func (rd endpointRender) checkHost(url string) error {
	if herr := scenario.CheckHost(url, rd.allow); herr != nil {
		return fmt.Errorf("endpoint %s: %v; allow it with allow_hosts or --allow-host %s", rd.name, herr, herr.Host)
	}
	return nil
}

// mcpConfig renders an MCP endpoint's settings.
func (rd endpointRender) mcpConfig(def *scenario.Endpoint) (mcp.Config, error) {
	m := def.MCP
	cfg := mcp.Config{KeyArg: def.Key.Arg, KeyMeta: def.Key.Meta, Dir: m.Dir, Timeout: m.Timeout, InitTimeout: m.InitTimeout,
		Stderr: proc.NewTail(16 << 10), Policy: netguard.New(rd.allow), MaxResponseBytes: m.MaxResponseBytes}
	if m.ConflictMatch != "" {
		cfg.ConflictMatch = regexp.MustCompile(m.ConflictMatch)
	}
	var err error
	if m.URL != nil {
		if cfg.URL, err = rd.str(m.URL, "url"); err != nil {
			return cfg, err
		}
		if err := rd.checkHost(cfg.URL); err != nil {
			return cfg, err
		}
		if cfg.Headers, err = rd.strs(m.Headers, "header"); err != nil {
			return cfg, err
		}
	}
	for _, t := range m.Command {
		v, err := rd.str(t, "command")
		if err != nil {
			return cfg, err
		}
		cfg.Command = append(cfg.Command, v)
	}
	envs, err := rd.strs(m.Env, "env")
	if err != nil {
		return cfg, err
	}
	for k, v := range envs {
		cfg.Env = append(cfg.Env, k+"="+v)
	}
	return cfg, nil
}

// httpEndpoint builds an HTTP endpoint: a URL template, or the operations of an OpenAPI
// document.
func (r *runner) httpEndpoint(def *scenario.Endpoint, rd endpointRender) (endpoint.Endpoint, error) {
	var url string
	if def.HTTP.URL != nil {
		var err error
		if url, err = rd.str(def.HTTP.URL, "url"); err != nil {
			return nil, err
		}
	}
	spec, err := r.openAPI(def, rd.str, rd.checkHost, rd.allow)
	if err != nil {
		return nil, err
	}
	fromSpec := spec != nil && url == ""
	if fromSpec {
		if url, err = specServer(def, spec, r.listOnly); err != nil {
			return nil, err
		}
	}
	// Listing a document's operations sends nothing: its server is checked when called
	// (the outbound policy refuses it then).
	if !(fromSpec && r.listOnly) {
		if err := rd.checkHost(url); err != nil {
			return nil, err
		}
	}
	headers, err := rd.strs(def.HTTP.Headers, "header")
	if err != nil {
		return nil, err
	}
	cfg := endpoint.HTTPConfig{
		URL: url, Method: def.HTTP.Method, Headers: headers,
		KeyHeader: def.Key.Header, KeyArg: def.Key.Arg,
		Timeout: def.HTTP.Timeout, MaxResponseBytes: def.HTTP.MaxResponseBytes,
		Policy: netguard.New(rd.allow),
	}
	var tools []endpoint.Tool
	if spec != nil {
		cfg.Operations, tools = specOperations(spec, url)
	}
	h, err := endpoint.NewHTTP(cfg)
	if err != nil {
		return nil, fmt.Errorf("endpoint %s: %w", rd.name, err)
	}
	if spec != nil {
		return &endpoint.ListedHTTP{HTTP: h, List: tools}, nil
	}
	return h, nil
}

// templateEnv is the environment of a scenario's endpoint, service and probe settings.
func (r *runner) templateEnv(sc *scenario.Scenario) map[string]any {
	return r.svcs.templateEnv(sc)
}

// mutating decides whether a tool gets a key. Without a mutating list, an endpoint that can list
// its tools decides by annotations (every tool not marked readOnlyHint), and an unknown tool is
// an error that names the tools the server has.
func (r *runner) mutating(ctx context.Context, ep endpoint.Endpoint, def *scenario.Endpoint, tool string) (bool, error) {
	lister, ok := ep.(endpoint.ToolLister)
	if !ok {
		return Mutating(def, tool, nil), nil
	}
	tools, err := lister.Tools(ctx)
	if err != nil {
		return false, err
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		if t.Name == tool {
			return Mutating(def, tool, &t), nil
		}
		names = append(names, t.Name)
	}
	return false, fmt.Errorf("endpoint %s has no tool %q; its tools: %s", def.Name, tool, strings.Join(names, ", "))
}

// outputMarks is where the output of a scenario's services and stdio MCP servers stands before
// a trial, so that its failure shows only what they wrote during it.
type outputMarks struct {
	services, mcp map[string]int64
}

func (r *runner) marks(sc *scenario.Scenario) outputMarks {
	m := outputMarks{services: r.svcs.marks(sc), mcp: map[string]int64{}}
	for name, w := range r.mcpTails(sc) {
		m.mcp[name] = w.Mark()
	}
	return m
}

// mcpTails are the standard errors of the scenario's stdio MCP servers started so far, by
// endpoint name.
func (r *runner) mcpTails(sc *scenario.Scenario) map[string]*proc.Tail {
	env := r.templateEnv(sc)
	r.mu.Lock()
	defer r.mu.Unlock()
	tails := map[string]*proc.Tail{}
	for name, def := range sc.Endpoints {
		if w := r.stderr[endpointKey(def, env, endpointAllowHosts(sc, def))]; w != nil {
			tails[name] = w
		}
	}
	return tails
}

// mcpStderr adds what the scenario's stdio MCP servers wrote to standard error since the marks
// to a failure. A server started during the trial has no mark: all it wrote counts.
func (r *runner) mcpStderr(sc *scenario.Scenario, marks map[string]int64, f *Failure) {
	for name, w := range r.mcpTails(sc) {
		if out := strings.TrimSpace(w.Since(marks[name])); out != "" {
			if f.ServiceOutput == nil {
				f.ServiceOutput = map[string]string{}
			}
			f.ServiceOutput["mcp "+name] = lastBytes(out, serviceTail)
		}
	}
}

func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// scenario runs every trial; it stops at the first failing trial.
func (r *runner) scenario(ctx context.Context, sc *scenario.Scenario, res *ScenarioResult) {
	res.Start = time.Now()
	defer func() { res.Duration = time.Since(res.Start) }()
	// Scenarios sharing a sink take turns: its recordings belong to one scenario at a time.
	for _, s := range r.sinks.of(sc) {
		s.lock.Lock()
		defer s.lock.Unlock()
	}
	res.Status = Passed
	cut := false
	for i := 1; i <= res.Trials; i++ {
		if ctx.Err() != nil {
			cut = true
			break
		}
		marks := r.marks(sc)
		t := r.trial(ctx, sc, i, res)
		res.History = append(res.History, t)
		r.emit(Event{Kind: EventTrialEnd, Scenario: sc, Trial: i, Session: t.Session})
		if ctx.Err() != nil {
			// The interrupt came before the trial ended: whatever it says (a call cancelled
			// mid-flight, an assertion cut short, a sleep that ended early) is not a verdict on
			// the tool, so the trial is neither passed nor failed.
			res.Cut, cut = t, true
			break
		}
		res.TrialsRun++
		if i == 1 {
			res.Trial1 = t
		}
		if t.Passed {
			res.TrialsPassed++
			continue
		}
		res.TrialsFailed++
		if res.FailedTrial == nil {
			res.FailedTrial, res.Failure = t, t.Failure
			t.Failure.ServiceOutput = r.svcs.tails(sc, marks.services, serviceTail)
			r.mcpStderr(sc, marks.mcp, t.Failure)
			res.Status = Failed
		}
		if t.Failure.Kind == FailError {
			// The scenario could not run (a service died, an endpoint is misconfigured): more
			// trials would only repeat that.
			res.Status = Errored
			break
		}
		if r.opts.FailFast {
			break
		}
	}
	res.Warnings = res.paths.warnings()
	switch {
	case res.FailedTrial != nil:
		// A failure found before the interrupt stands.
	case cut:
		res.Status = Interrupted
	case res.TrialsRun == 0:
		res.Status = Skipped
	}
}

func newSession() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (r *runner) session(trial int) string {
	switch {
	case r.opts.Session == "":
		return newSession()
	case trial == 1:
		return r.opts.Session
	}
	return fmt.Sprintf("%s-%d", r.opts.Session, trial)
}

// trialState is what one trial's steps share.
type trialState struct {
	sc    *scenario.Scenario
	trial *Trial
	env   map[string]any
	index int // logical calls so far, for default keys
	keys  map[string]string
	args  map[string]map[string]any
	sent  map[string]string // keys already sent in this trial, with the step that sent each first
	// judged holds every call of the trial as the verdict sees it; exempt the steps whose
	// calls it does not judge (verdict: off, a tool idempotent by nature).
	judged  []verdict.Call
	exempt  map[string]string // step id → why it is not judged (an Unjudged reason), "" when it is
	metrics *Metrics
	res     *ScenarioResult
	mu      sync.Mutex
}

func (r *runner) trial(ctx context.Context, sc *scenario.Scenario, idx int, res *ScenarioResult) *Trial {
	start := time.Now()
	t := &Trial{Index: idx, Session: r.session(idx), Start: start}
	st := &trialState{
		sc: sc, trial: t,
		env:     map[string]any{"session": t.Session, "trial": idx},
		keys:    map[string]string{},
		args:    map[string]map[string]any{},
		sent:    map[string]string{},
		exempt:  map[string]string{},
		metrics: &res.Metrics,
		res:     res,
	}
	defer func() { t.Duration = time.Since(start) }()
	// The verdict judges whatever the trial sent, however it ended.
	defer r.judge(st)
	for _, s := range r.sinks.of(sc) {
		s.s.Reset()
	}
	if f := r.preflight(st); f != nil {
		t.Failure = f
		return t
	}
	for _, step := range sc.Steps {
		if err := r.svcs.dead(); err != nil {
			t.Failure = stepError(step, err)
			return t
		}
		if ctx.Err() != nil {
			t.Failure = stepFailure(FailError, step, "interrupted")
			return t
		}
		var f *Failure
		switch step.Kind {
		case scenario.CallStep:
			f = r.call(ctx, st, step)
		case scenario.AssertStep:
			f = r.assert(ctx, st, step)
		case scenario.SleepStep:
			select {
			case <-ctx.Done():
			case <-time.After(step.Sleep):
			}
		}
		if f != nil {
			if f.Kind != FailError {
				// A dead service explains a failed call better than the call does.
				if err := r.svcs.dead(); err != nil {
					f = stepError(step, err)
				}
			}
			t.Failure = f
			return t
		}
	}
	t.Passed = true
	return t
}

func (r *runner) assert(ctx context.Context, st *trialState, step *scenario.Step) *Failure {
	deadline := time.Now().Add(step.Eventually)
	st.res.paths.read(step, st.env)
	for {
		perr := r.observe(ctx, st, step.Assert.Uses)
		ok, err := evaluate(ctx, func() (bool, error) { return step.Assert.Bool(st.env) })
		if ctx.Err() != nil {
			return interrupted(step)
		}
		if err == nil && ok {
			return nil
		}
		if perr != nil {
			err = perr
		}
		if time.Now().After(deadline) {
			f := stepFailure(FailAssert, step, "")
			f.Expression = step.Assert.Source
			if err != nil {
				f.Message = "assertion could not be evaluated: " + err.Error()
			} else {
				f.Message = "assertion is false"
				if step.Eventually > 0 {
					f.Message = fmt.Sprintf("assertion still false after %s", step.Eventually)
				}
			}
			var ierr error
			if f.Explanation, ierr = interruptible(ctx, func() []string { return step.Assert.Explain(st.env) }); ierr != nil {
				return interrupted(step)
			}
			return f
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(50*time.Millisecond, time.Until(deadline)+time.Millisecond)):
		}
	}
}

// interrupted is the failure of a step that Ctrl-C cut short: not a verdict on the tool.
func interrupted(step *scenario.Step) *Failure {
	return stepFailure(FailError, step, "interrupted")
}

// usesName reports whether a template in v refers to name.
func usesName(v any, name string) bool {
	switch x := v.(type) {
	case *assert.Template:
		return x.Uses(name)
	case map[string]any:
		for _, e := range x {
			if usesName(e, name) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if usesName(e, name) {
				return true
			}
		}
	}
	return false
}

// render evaluates the {{ }} templates in a step's arguments.
func render(v any, env map[string]any) (any, error) {
	switch x := v.(type) {
	case *assert.Template:
		return x.Eval(env)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			rv, err := render(e, env)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = rv
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			rv, err := render(e, env)
			if err != nil {
				return nil, err
			}
			out[i] = rv
		}
		return out, nil
	}
	return v, nil
}

// keyFor decides the idempotency key of a call step: a retry reuses its original's, an
// explicit key (key: or in the arguments) is used as given, otherwise <session>-<index>.
func (st *trialState) keyFor(step *scenario.Step, def *scenario.Endpoint, mutating bool, args map[string]any) (string, error) {
	if step.WithoutKey || !mutating {
		return "", nil
	}
	if step.RetryOf != "" {
		return st.keys[step.RetryOf], nil
	}
	if step.Key != nil {
		v, err := step.Key.Eval(st.env)
		if err != nil {
			return "", fmt.Errorf("key: %w", err)
		}
		// A key built from a server's answer is refused before any copy is sent.
		k := assert.Text(v)
		if err := endpoint.CheckKey(k); err != nil {
			return "", fmt.Errorf("key: %w", err)
		}
		return k, nil
	}
	if def.Key.Arg != "" {
		if k, ok := args[def.Key.Arg].(string); ok && k != "" {
			if err := endpoint.CheckKey(k); err != nil {
				return "", fmt.Errorf("args.%s: %w", def.Key.Arg, err)
			}
			return k, nil
		}
	}
	k := fmt.Sprintf("%s-%d", st.trial.Session, st.index)
	st.index++
	return k, nil
}

func (r *runner) call(ctx context.Context, st *trialState, step *scenario.Step) *Failure {
	ep, def, err := r.endpoint(st.sc, step.Endpoint)
	if err != nil {
		return stepError(step, err)
	}
	if err := r.observe(ctx, st, func(name string) bool { return usesName(step.Args, name) || (step.Key != nil && step.Key.Uses(name)) }); err != nil {
		return stepError(step, err)
	}
	var args map[string]any
	if step.Args == nil && step.RetryOf != "" {
		args = st.args[step.RetryOf]
	} else {
		rv, err := evaluate(ctx, func() (any, error) { return render(step.Args, st.env) })
		if ctx.Err() != nil {
			return interrupted(step)
		}
		if err != nil {
			return stepFailure(FailError, step, "args: "+err.Error())
		}
		args, _ = rv.(map[string]any)
	}
	mutating, err := r.mutating(ctx, ep, def, step.Tool)
	if err != nil {
		return stepError(step, err)
	}
	key, err := evaluate(ctx, func() (string, error) { return st.keyFor(step, def, mutating, args) })
	if ctx.Err() != nil {
		return interrupted(step)
	}
	if err != nil {
		return stepError(step, err)
	}
	st.exempt[step.ID] = r.exemption(ctx, ep, def, step)
	if key != "" && def.Key.Arg != "" && args != nil {
		// The key travels as an argument and the endpoint adds it; a copy written by hand in the
		// arguments is dropped so that a retry's arguments are the original's.
		delete(args, def.Key.Arg)
	}
	st.keys[step.ID] = key
	st.args[step.ID] = args
	req := endpoint.Request{Tool: step.Tool, Args: args, Key: key, Timeout: step.Timeout, LoseResponse: step.LoseResponse}

	if step.Fanout > 1 {
		return r.fanout(ctx, st, step, ep, req)
	}
	var res endpoint.Result
	attempts := 0
	for {
		attempts++
		// A lost response is lost once: the retry loop hears the later attempts' answers.
		req.LoseResponse = step.LoseResponse && attempts == 1
		res = ep.Call(ctx, req)
		r.record(st, step, 0, attempts, key, res)
		if step.Retry == nil || attempts >= step.Retry.Attempts || !shouldRetry(step.Retry, res) || ctx.Err() != nil {
			break
		}
		backoff := step.Retry.Backoff << (attempts - 1)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
	}
	out := callResult(res, key, attempts)
	if res.Lost {
		out = lostResult(res, key)
	}
	st.env[step.ID] = out
	got := scenario.Outcome(out.Outcome)
	if step.Expect != scenario.Any && got != step.Expect {
		return stepFailure(FailExpect, step, fmt.Sprintf("%s: expected outcome %s, got %s%s", step.Tool, step.Expect, got, describeResult(res)))
	}
	return nil
}

func describeResult(res endpoint.Result) string {
	switch {
	case res.Lost && res.Status != 0:
		return fmt.Sprintf(" (the response, status %d, was discarded)", res.Status)
	case res.Error != "":
		return " (" + res.Error + ")"
	case res.Status != 0:
		return fmt.Sprintf(" (status %d)", res.Status)
	}
	return ""
}

func shouldRetry(p *scenario.Retry, res endpoint.Result) bool {
	for _, on := range p.On {
		switch on {
		case scenario.RetryInfo:
			if res.Outcome == endpoint.Info {
				return true
			}
		case scenario.RetryConflict:
			if res.Conflict {
				return true
			}
		case scenario.Retry5xx:
			if res.Status >= 500 {
				return true
			}
		case scenario.RetryFail:
			if res.Outcome == endpoint.Fail {
				return true
			}
		}
	}
	return false
}

// record appends a call to the trial's history and the metrics.
func (r *runner) record(st *trialState, step *scenario.Step, copy, attempt int, key string, res endpoint.Result) {
	c := Call{
		Step: step.ID, Tool: step.Tool, Endpoint: step.Endpoint, Copy: copy, Attempt: attempt, Key: key,
		Outcome: res.Outcome, Status: res.Status, Replayed: res.Replayed, Conflict: res.Conflict,
		Error: res.Error, Start: res.Start, Duration: res.Duration, Lost: res.Lost,
		Sent: res.Sent, Answered: res.Answered, Result: res.Result, Discarded: res.Discarded,
		Args: st.args[step.ID], Mutating: key != "" || step.WithoutKey,
	}
	st.mu.Lock()
	st.trial.Calls = append(st.trial.Calls, c)
	m := st.metrics
	m.Calls++
	switch c.Outcome {
	case scenario.OK:
		m.OK++
	case scenario.Fail:
		m.Fail++
	case scenario.Info:
		m.Info++
	}
	if c.Conflict {
		m.Conflicts++
	}
	if key != "" {
		m.Keyed++
		// The copies of one fan-out are concurrent duplicates, not retries: a retry is a later
		// step or attempt sending a key again.
		if first, seen := st.sent[key]; seen {
			if copy > 0 && first == step.ID {
				m.Copies++
			} else {
				m.Retries++
			}
		} else {
			st.sent[key] = step.ID
		}
		if why := st.exempt[step.ID]; why != "" {
			m.addUnjudged(Unjudged{Endpoint: step.Endpoint, Tool: step.Tool, Reason: why, Calls: 1})
		}
	}
	var ignore []string
	if def := st.sc.Endpoints[step.Endpoint]; def != nil {
		ignore = def.Ignore
	}
	st.judged = append(st.judged, verdict.Call{
		Key: key, Endpoint: step.Endpoint, Tool: step.Tool, Step: step.ID, Copy: copy, Attempt: attempt,
		OK:   res.Outcome == endpoint.OK || (res.Lost && res.Discarded == endpoint.OK),
		Lost: res.Lost, Replayed: res.Replayed, Answer: res.Result, Ignore: ignore, Exempt: st.exempt[step.ID] != "", Args: st.args[step.ID],
	})
	st.mu.Unlock()
	r.emit(Event{Kind: EventCall, Scenario: st.sc, Call: &c, Trial: st.trial.Index, Session: st.trial.Session})
}

// callResult is what assertions see of a call.
func callResult(res endpoint.Result, key string, attempts int) assert.CallResult {
	headers := make(map[string]string, len(res.Headers))
	for k, v := range res.Headers {
		headers[k] = v
	}
	return assert.CallResult{
		OK:         res.Outcome == endpoint.OK,
		Outcome:    string(res.Outcome),
		Status:     res.Status,
		Error:      res.Error,
		Result:     res.Result,
		Replayed:   res.Replayed,
		Conflict:   res.Conflict,
		Key:        key,
		DurationMS: float64(res.Duration.Microseconds()) / 1000,
		Headers:    headers,
		Attempts:   attempts,
	}
}

// lostResult is what the scenario sees of a call whose response was discarded: nothing came back.
func lostResult(res endpoint.Result, key string) assert.CallResult {
	return assert.CallResult{
		Outcome: string(endpoint.Info), Error: "response discarded (lose_response)", Key: key,
		DurationMS: float64(res.Duration.Microseconds()) / 1000,
		Headers:    map[string]string{}, Attempts: 1, Lost: true,
	}
}

// fanout prepares every copy (own connection, bytes encoded), releases them together and
// records how far apart they left and whether they raced at all.
func (r *runner) fanout(ctx context.Context, st *trialState, step *scenario.Step, ep endpoint.Endpoint, req endpoint.Request) *Failure {
	n := step.Fanout
	fo := endpoint.Fanout(ctx, ep, req, endpoint.FanoutOptions{
		Copies: n, Sync: step.Sync, StaggerMin: step.StaggerMin, StaggerMax: step.StaggerMax,
	})
	if ctx.Err() != nil {
		return stepFailure(FailError, step, "interrupted")
	}
	if fo.Err != nil {
		// Not an answer of the tool: the copies never left, so the step cannot say anything.
		return stepFailure(FailError, step, fmt.Sprintf("%s: fan-out of %d not sent: %v", step.Tool, n, fo.Err))
	}
	out := assert.FanoutResult{Calls: make([]assert.CopyResult, n), SpreadUS: fo.SpreadUS, Overlapped: fo.Overlapped, Key: req.Key, Fanout: n}
	var firstSent time.Time
	for _, res := range fo.Results {
		if !res.Sent.IsZero() && (firstSent.IsZero() || res.Sent.Before(firstSent)) {
			firstSent = res.Sent
		}
	}
	since := func(t time.Time) *float64 {
		if t.IsZero() || firstSent.IsZero() {
			return nil
		}
		us := float64(t.Sub(firstSent).Nanoseconds()) / 1000
		return &us
	}
	for i, res := range fo.Results {
		r.record(st, step, i+1, 1, req.Key, res)
		c := assert.CopyResult{CallResult: callResult(res, req.Key, 1), OffsetUS: float64(fo.Offsets[i].Nanoseconds()) / 1000}
		// When this copy left and when its answer began, from the first copy's release.
		c.ReleasedUS, c.AnsweredUS = since(res.Sent), since(res.Answered)
		out.Calls[i] = c
		switch res.Outcome {
		case endpoint.OK:
			out.OK++
		case endpoint.Fail:
			out.Fail++
		case endpoint.Info:
			out.Info++
		}
		if res.Conflict {
			out.Conflict++
		}
	}
	st.mu.Lock()
	st.metrics.SpreadMaxUS = max(st.metrics.SpreadMaxUS, fo.SpreadUS)
	if len(st.res.SpreadsUS) < maxSpreadSamples {
		st.res.SpreadsUS = append(st.res.SpreadsUS, fo.SpreadUS)
	}
	st.res.Fanouts++
	if fo.Overlapped {
		st.res.Overlapped++
	}
	st.mu.Unlock()
	st.env[step.ID] = out
	if step.Expect != scenario.Any {
		for i, res := range fo.Results {
			if res.Outcome != step.Expect {
				return stepFailure(FailExpect, step, fmt.Sprintf("%s: copy %d of %d: expected outcome %s, got %s%s", step.Tool, i+1, n, step.Expect, res.Outcome, describeResult(res)))
			}
		}
	}
	return nil
}
