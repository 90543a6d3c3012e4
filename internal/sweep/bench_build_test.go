package sweep

import (
	"testing"

	"github.com/idemtest/idemtest/internal/scenario"
)

// buildRun builds run r's scenario as execute does: the cell the sweep keeps, and the scenario
// that is alive while the run runs.
func buildRun(tb testing.TB, s *sweeper, r run) (*Cell, *scenario.Scenario) {
	sc, err := s.build(r)
	if err != nil {
		tb.Fatal(err)
	}
	return &Cell{Fault: r.fault, run: r}, sc
}
