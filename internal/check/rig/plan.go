package rig

import (
	"fmt"
	"sort"
	"strings"

	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/toolset"
)

// Plan is a spec as the battery runs it: the scenario, and what the battery counts and learns
// about it beyond what is written.
type Plan struct {
	*scenariogen.Spec
	// Executions is how many times the tool must execute in one trial (-1: not counted), for
	// the sinks' and the declared effects' evidence.
	Executions int
	// SinksAsserted is set once the sink counts were added as assertions.
	SinksAsserted bool
	// SinkNames and SinkLines say which sinks heard more or less than the executions send, in
	// the last run.
	SinkNames, SinkLines []string
	// SinksFewer is set when a sink named in SinkNames heard fewer requests than the executions
	// send (none more): what it shows is a missing execution's requests, not another's.
	SinksFewer bool
	// Effects is the effects assertion added (""), EffectsLines why it failed in a run, Last
	// the last run's result.
	Effects      string
	EffectsLines []string
	Last         *result.ScenarioResult
	// CountUnless, when set, is a condition under which the executions are not counted: the
	// effects and sink assertions hold when it does (errors-not-replayed: a "broken" call the
	// server accepted executed as a call the effects expression may not see).
	CountUnless string
	// Output is what the services and stdio MCP servers wrote during the last run, by name.
	Output map[string]string
	// NeedsEvidence marks an inconclusive cell that the declared effects or the sinks can show
	// failed (another number of executions than Executions).
	NeedsEvidence bool
}

// NewPlan is the plan of check on tool t: its scenario, named for the cell it decides.
func (b *Rig) NewPlan(t toolset.ToolInfo, check, name string, steps ...scenariogen.Step) *Plan {
	return &Plan{Spec: &scenariogen.Spec{Name: t.Name + ": " + name, Tags: []string{"check", check}, Endpoint: b.Def.Name, Tool: t.Name, Check: check, Steps: steps}, Executions: -1}
}

// Exec runs one spec once through the runner.
func (b *Rig) Exec(s *Plan) (*result.ScenarioResult, error) {
	if b.perCall != nil && s.Executions >= 0 && !s.SinksAsserted {
		s.Steps = append(s.Steps, b.sinkAsserts(s.Executions, s.CountUnless)...)
		s.SinksAsserted = true
	}
	b.beforeRun(s)
	sc, err := s.Scenario(b.base)
	if err != nil {
		return nil, err
	}
	since := b.env.OutputSince(sc, serviceTail)
	rep := b.env.Run(b.Ctx, []*scenario.Scenario{sc}, runner.Options{})
	s.Output = since()
	if rep.Err != nil {
		return nil, rep.Err
	}
	s.SinkNames, s.SinkLines, s.SinksFewer = b.sinkCheck(s)
	if len(rep.Scenarios) == 0 {
		return nil, fmt.Errorf("nothing ran")
	}
	b.afterRun(s, rep.Scenarios[0])
	return rep.Scenarios[0], nil
}

// serviceTail is how much of each service's output a cell shows.
const serviceTail = 2048

// OutputLines are what the services wrote during the plan's last run, as lines under a cell:
// the server's own warning often names the cause.
func (s *Plan) OutputLines() []string {
	var out []string
	for _, name := range sortedKeys(s.Output) {
		out = append(out, "output of "+name+" during this check:")
		for _, l := range strings.Split(s.Output[name], "\n") {
			out = append(out, "  | "+l)
		}
	}
	return out
}

// sinkAsserts are the assertions that the sinks heard exactly what executions of the tool send.
func (b *Rig) sinkAsserts(n int, guard string) []scenariogen.Step {
	var out []scenariogen.Step
	for _, name := range sortedKeys(b.perCall) {
		out = append(out, scenariogen.Step{Assert: unless(guard, fmt.Sprintf("len(%s.requests) == %d", name, n*b.perCall[name]))})
	}
	return out
}

// sinkCheck compares what the sinks heard in the last trial with what the spec's executions
// send; it returns the sinks that heard more or less, explained.
func (b *Rig) sinkCheck(s *Plan) (names, lines []string, fewer bool) {
	if b.perCall == nil || s.Executions < 0 {
		return nil, nil, false
	}
	got := b.env.SinkRequests(b.base)
	more := false
	for _, name := range sortedKeys(b.perCall) {
		want := s.Executions * b.perCall[name]
		if got[name] != want {
			names = append(names, name)
			lines = append(lines, fmt.Sprintf("sink %s received %d requests; %d execution(s) send %d", name, got[name], s.Executions, want))
			more = more || got[name] > want
		}
	}
	return names, lines, len(names) > 0 && !more
}

// Sinks are the sinks that one execution of the tool being checked sends requests to, by name
// (none: no sink evidence).
func (b *Rig) Sinks() []string {
	if b.perCall == nil {
		return nil
	}
	return sortedKeys(b.perCall)
}

// unless is an assertion that holds when guard does ("" : no guard).
func unless(guard, assertion string) string {
	if guard == "" {
		return assertion
	}
	return guard + " || " + assertion
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
