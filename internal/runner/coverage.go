package runner

import (
	"context"
	"sort"

	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
)

// Coverage lists, for every endpoint the scenarios define, the mutating tools (as
// endpoints.Mutating decides: annotations, mutating:, OpenAPI methods) that no call of rep
// reached, less those the config's coverage.exempt names, which are listed with their reason
// (DESIGN §12). Endpoints come in name order; an endpoint defined differently by two scenarios
// is listed as the first defines it.
func (e *Env) Coverage(ctx context.Context, list []*scenario.Scenario, rep *result.Report) []result.Coverage {
	called := map[[2]string]bool{}
	for _, s := range rep.Scenarios {
		for _, t := range s.History {
			for _, c := range t.Calls {
				called[[2]string{c.Endpoint, c.Tool}] = true
			}
		}
	}
	defs := map[string]*scenario.Scenario{}
	for _, sc := range list {
		for name := range sc.Endpoints {
			if defs[name] == nil {
				defs[name] = sc
			}
		}
	}
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	out := []result.Coverage{}
	for _, name := range names {
		sc := defs[name]
		cov := result.Coverage{Endpoint: name, Uncovered: []result.Uncovered{}}
		if ctx.Err() != nil {
			break
		}
		tools, err := e.Tools(ctx, sc, name)
		if err != nil {
			cov.Error = err.Error()
			out = append(out, cov)
			continue
		}
		for _, t := range tools {
			if !t.Mutating {
				continue
			}
			cov.Mutating++
			if called[[2]string{name, t.Name}] {
				continue
			}
			if sc.Coverage != nil && sc.Coverage.Exempt[t.Name] != "" {
				cov.Exempt = append(cov.Exempt, result.Uncovered{Tool: t.Name, Reason: sc.Coverage.Exempt[t.Name]})
				continue
			}
			cov.Uncovered = append(cov.Uncovered, result.Uncovered{Tool: t.Name})
		}
		sort.Slice(cov.Uncovered, func(i, j int) bool { return cov.Uncovered[i].Tool < cov.Uncovered[j].Tool })
		sort.Slice(cov.Exempt, func(i, j int) bool { return cov.Exempt[i].Tool < cov.Exempt[j].Tool })
		out = append(out, cov)
	}
	return out
}
