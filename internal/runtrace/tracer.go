package runtrace

import (
	"encoding/json"
	"maps"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/trace"
)

// Tracer writes every call of a run to a trace (DESIGN §10), each tagged with its scenario,
// trial, step and endpoint. Pass its Event method on to Options.OnEvent; it is safe for
// concurrent use.
type Tracer struct {
	w     *trace.Writer
	mu    sync.Mutex
	seq   int
	start time.Time
	err   error
}

// NewTracer returns a tracer writing to w.
func NewTracer(w *trace.Writer) *Tracer {
	return &Tracer{w: w, start: w.Started()}
}

// Event writes a call event to the trace and ignores the others.
func (t *Tracer) Event(ev runner.Event) {
	if ev.Kind != runner.EventCall || ev.Call == nil {
		return
	}
	c := Call(ev)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	t.seq++
	c.Seq = t.seq
	c.AtUS = ev.Call.Start.Sub(t.start).Microseconds()
	// A call with a result too long for a trace line is written without it, marked.
	t.err = t.w.Write(trace.Bound(c))
}

// Err is the first error writing the trace.
func (t *Tracer) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Call is a call event as a trace line (without its seq and at_us): the arguments as sent,
// the key argument included when the key travels as one; a response the scenario lost is
// outcome info with fault lose-response and the server's answer kept.
func Call(ev runner.Event) trace.Call {
	c := ev.Call
	tc := trace.Call{
		Tool: c.Tool, Key: c.Key, Mutating: c.Mutating, Outcome: outcome.Outcome(c.Outcome),
		Status: c.Status, Replayed: c.Replayed, Error: c.Error, DurationUS: c.Duration.Microseconds(),
		Scenario: ev.Scenario.Name, Trial: ev.Trial, Step: c.Step, Endpoint: c.Endpoint, Instance: c.Instance,
		TraceID: c.TraceID,
	}
	args := c.Args
	if def := ev.Scenario.Endpoints[c.Endpoint]; def != nil {
		tc.KeyCarrier = def.Key.String()
		if def.Key.Arg != "" && c.Key != "" {
			args = maps.Clone(args)
			if args == nil {
				args = map[string]any{}
			}
			args[def.Key.Arg] = c.Key
		}
	}
	if args != nil {
		tc.Args, _ = json.Marshal(args)
	}
	if c.Result != nil {
		tc.Result, _ = json.Marshal(c.Result)
	}
	if c.Lost {
		tc.Fault = "lose-response"
	}
	return tc
}
