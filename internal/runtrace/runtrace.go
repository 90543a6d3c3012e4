package runtrace

import (
	"io"
	"sort"
	"strings"

	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/trace"
)

// New starts the trace of a run of list on w (run --trace): its header names every
// endpoint the scenarios may call, and the tracer writes each call as it happens.
func New(w io.Writer, list []*scenario.Scenario) (*Tracer, error) {
	tw, err := trace.NewWriter(w, trace.Header{Endpoint: endpointNames(list)})
	if err != nil {
		return nil, err
	}
	return NewTracer(tw), nil
}

// endpointNames lists the endpoints the scenarios may call, for a trace's header; each call
// names its own.
func endpointNames(list []*scenario.Scenario) string {
	seen := map[string]bool{}
	var names []string
	for _, sc := range list {
		for name := range sc.Endpoints {
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
