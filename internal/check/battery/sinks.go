package battery

import (
	"fmt"
	"sort"
	"strings"

	"github.com/idemtest/idemtest/internal/check/spec"
	"github.com/idemtest/idemtest/internal/runner"
)

// run decides one cell, and adds what the sinks heard to it.
func (b *Battery) run(id string, t runner.ToolInfo, args map[string]any) *Cell {
	c := b.cell(id, t, args)
	s := c.plan
	if s == nil || s.executions < 0 || b.perCall == nil || c.Status == Inconclusive || c.Status == Skip {
		return c
	}
	if len(s.sinkNames) == 0 {
		if c.Status == Pass {
			c.Evidence = strings.TrimPrefix(c.Evidence+", "+bySinks+" ("+strings.Join(sortedKeys(b.perCall), ", ")+")", ", ")
		}
		return c
	}
	if c.Status != Fail {
		c.Status, c.Reason = Fail, "the sinks heard another execution: "+strings.Join(s.sinkLines, "; ")
	}
	c.Evidence = strings.TrimPrefix(c.Evidence+", "+bySinks+" ("+strings.Join(s.sinkNames, ", ")+")", ", ")
	c.Details = append(append([]string(nil), s.sinkLines...), c.Details...)
	return c
}

// sinkAsserts are the assertions that the sinks heard exactly what executions of the tool send.
func (b *Battery) sinkAsserts(n int) []spec.Step {
	var out []spec.Step
	for _, name := range sortedKeys(b.perCall) {
		out = append(out, spec.Step{Assert: fmt.Sprintf("len(%s.requests) == %d", name, n*b.perCall[name])})
	}
	return out
}

// sinkCheck compares what the sinks heard in the last trial with what the spec's executions
// send; it returns the sinks that heard more or less, explained.
func (b *Battery) sinkCheck(s *plan) (names, lines []string) {
	if b.perCall == nil || s.executions < 0 {
		return nil, nil
	}
	got := b.env.SinkRequests(b.base)
	for _, name := range sortedKeys(b.perCall) {
		want := s.executions * b.perCall[name]
		if got[name] != want {
			names = append(names, name)
			lines = append(lines, fmt.Sprintf("sink %s received %d requests; %d execution(s) send %d", name, got[name], s.executions, want))
		}
	}
	return names, lines
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
