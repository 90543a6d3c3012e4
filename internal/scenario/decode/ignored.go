package decode

import (
	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/scenario"
)

// An option that would be accepted and then have no effect is refused when the file loads: a
// scenario that reads as a retried fan-out or a synchronised call must not quietly test less.

// refuseIgnored reports the options of a call step that only mean something with others.
func (f *file) refuseIgnored(st *scenario.Step, m map[string]*yaml.Node) {
	if st.Fanout > 1 {
		// The copies of a fan-out are one logical call released at once; retrying each copy
		// would be a second race, which a later step expresses better.
		if x := m["retry"]; x != nil {
			f.Errf(x, "a fan-out's copies are not retried: retry in a later step (retry_of: ID with retry: or fanout:)",
				"retry cannot be combined with fanout")
		}
		return
	}
	for _, k := range []string{"sync", "stagger"} {
		if x := m[k]; x != nil {
			f.Errf(x, "add fanout: N (2 or more) to send copies together, or remove "+k+":", "%s only applies to a fan-out", k)
		}
	}
}
