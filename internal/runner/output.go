package runner

import (
	"strings"

	"github.com/idemtest/idemtest/internal/proc"
	"github.com/idemtest/idemtest/internal/scenario"
)

// OutputSince marks where the output of sc's services and stdio MCP servers stands now and
// returns a function that gives what each wrote since (its last n bytes, by name as a failure's
// ServiceOutput has them): check shows it under a cell as run shows it under a failure, passed
// trials included, since a check decides cells from trials that pass. It is redacted with sc's
// secrets.
func (e *Env) OutputSince(sc *scenario.Scenario, n int) func() map[string]string {
	m := e.r.marks(sc)
	return func() map[string]string {
		out := e.r.svcs.Tails(sc, m.services, n)
		for name, w := range e.r.endpoints.Stderr(sc) {
			if text := strings.TrimSpace(w.Since(m.mcp[name])); text != "" {
				if out == nil {
					out = map[string]string{}
				}
				out["mcp "+name] = proc.LastBytes(text, n)
			}
		}
		red := e.r.redactor(sc)
		for name, text := range out {
			out[name] = red.String(text)
		}
		return out
	}
}
