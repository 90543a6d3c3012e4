package cmd

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/trace"
)

// openRunTrace opens the --trace file before anything is sent and returns the tracer that
// writes every call of the run to it, redacted as the reports are. No path: a nil tracer.
func openRunTrace(path string, list []*scenario.Scenario, red *redact.Redactor) (*runner.Tracer, func(), error) {
	if path == "" {
		return nil, func() {}, nil
	}
	if path == "-" {
		return nil, nil, errors.New("--trace needs a file: standard output carries the report")
	}
	f, err := openReport(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--trace: %w", err)
	}
	w, err := trace.NewWriter(red.Writer(f), trace.Header{Endpoint: endpointNames(list)})
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("--trace: %w", err)
	}
	return runner.NewTracer(w), func() { f.Close() }, nil
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
