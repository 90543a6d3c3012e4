package runner

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/probe"
	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/service"
	"github.com/idemtest/idemtest/internal/toolset"
)

// Env is what scenarios run on: started sinks and services, and the endpoints built from them
// (an MCP server over stdio is started once and kept). Run uses one per run; commands that
// talk to an endpoint between runs (tools, init, check) keep one open across several.
type Env struct {
	r *runner
}

// runner is the state behind an Env: what it started, the endpoints built so far and the
// options of the run in progress.
type runner struct {
	opts   Options
	svcs   *service.Set
	sinks  *sinks
	probes *probe.Prober

	endpoints *toolset.Set

	redactMu  sync.Mutex
	redactors map[*redact.Secrets]*redact.Redactor
}

// redactor is the Redactor of sc's secrets, built once per set of secrets (check and sweep run
// many scenarios that share their endpoint's).
func (r *runner) redactor(sc *scenario.Scenario) *redact.Redactor {
	r.redactMu.Lock()
	defer r.redactMu.Unlock()
	red, ok := r.redactors[sc.Secrets]
	if !ok {
		if r.redactors == nil {
			r.redactors = map[*redact.Secrets]*redact.Redactor{}
		}
		red = redact.New(sc.Secrets)
		r.redactors[sc.Secrets] = red
	}
	return red
}

// Start starts the sinks and services of the scenarios, each once, and waits until the
// services are ready. On error everything already started is stopped again.
func Start(ctx context.Context, list []*scenario.Scenario) (*Env, error) {
	return StartWith(ctx, list, nil)
}

// StartWith is Start that tells onEvent (when set) as each service starts, becomes ready and,
// at Close, stops: the terminal shows them while it waits.
func StartWith(ctx context.Context, list []*scenario.Scenario, onEvent func(Event)) (*Env, error) {
	sks, err := startSinks(list)
	if err != nil {
		return nil, err
	}
	var onService func(service.Event)
	if onEvent != nil {
		onService = func(ev service.Event) {
			onEvent(Event{Kind: EventKind(ev.Kind), Service: ev.Service, SlowAfter: ev.SlowAfter, Grace: ev.Grace})
		}
	}
	svcs, err := service.Start(ctx, list, sks.urls, onService)
	if err != nil {
		sks.close()
		return nil, err
	}
	r := &runner{svcs: svcs, sinks: sks, endpoints: toolset.New(ctx, svcs.TemplateEnv)}
	r.probes = probe.New(r.probeTool)
	return &Env{r: r}, nil
}

// Close closes the endpoints and probe connections and stops the services and sinks.
func (e *Env) Close() {
	e.r.probes.Close()
	e.r.endpoints.Close()
	e.r.svcs.Stop()
	e.r.sinks.close()
}

// SinkURLs gives the URLs of a scenario's sinks by name (sinks.NAME.url in templates).
func (e *Env) SinkURLs(sc *scenario.Scenario) map[string]string {
	out := map[string]string{}
	for name, v := range e.r.sinks.urls(sc) {
		if m, ok := v.(map[string]any); ok {
			out[name], _ = m["url"].(string)
		}
	}
	return out
}

// mutating decides whether a tool gets a key. Without a mutating list, an endpoint that can list
// its tools decides by annotations (every tool not marked readOnlyHint), and an unknown tool is
// an error that names the tools the server has.
func (r *runner) mutating(ctx context.Context, ep endpoint.Endpoint, def *scenario.Endpoint, tool string) (bool, error) {
	lister, ok := ep.(endpoint.ToolLister)
	if !ok {
		return toolset.Mutating(def, tool, nil), nil
	}
	t, found, err := lister.Tool(ctx, tool)
	if err != nil {
		return false, err
	}
	if found {
		return toolset.Mutating(def, tool, &t), nil
	}
	tools, err := lister.Tools(ctx)
	if err != nil {
		return false, err
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return false, fmt.Errorf("endpoint %s has no tool %q; its tools: %s", def.Name, tool, strings.Join(names, ", "))
}

// SinkRequests counts, per sink of the scenario, the requests recorded in its last trial
// (recordings are kept until the next trial starts).
func (e *Env) SinkRequests(sc *scenario.Scenario) map[string]int {
	out := map[string]int{}
	for name, def := range sc.Sinks {
		if s := e.r.sinks.byKey[sinkKey(def)]; s != nil {
			reqs, _ := s.s.Snapshot()["requests"].([]any)
			out[name] = len(reqs)
		}
	}
	return out
}
