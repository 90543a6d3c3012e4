package result

import (
	"fmt"
	"sort"

	"github.com/idemtest/idemtest/internal/plural"
)

// Why the exactly-once verdict did not judge a tool's calls (DESIGN §8).
const (
	// UnjudgedNoID: the answers to a key were equal but carried no id, so they prove neither a
	// replay nor a second execution. It fails the trial.
	UnjudgedNoID = "no-id"
	// UnjudgedHint: the tool is annotated idempotentHint: true.
	UnjudgedHint = "idempotentHint"
	// UnjudgedNatural: the endpoint names the tool in natural:.
	UnjudgedNatural = "natural"
	// UnjudgedOff: the step sets verdict: off.
	UnjudgedOff = "verdict-off"
)

// Unjudged counts the calls of one tool that the exactly-once verdict did not judge, for one
// reason. A green run over unjudged calls proves less than it seems, so reports show them.
type Unjudged struct {
	Endpoint string `json:"endpoint"`
	Tool     string `json:"tool"`
	// Reason is one of the Unjudged constants.
	Reason string `json:"reason"`
	Calls  int    `json:"calls"`
}

// Message says which calls were not judged and why, and what to do about it.
func (u Unjudged) Message() string {
	switch u.Reason {
	case UnjudgedNoID:
		return fmt.Sprintf("%s of %s could not be judged: its answers carry no id (add an assertion on a sink or probe, e.g. a read tool that lists what %s created, then set verdict: off on the step)", plural.Count(u.Calls, "call"), u.Tool, u.Tool)
	case UnjudgedHint:
		return fmt.Sprintf("%s not judged: %s is declared idempotent (annotation idempotentHint)", plural.Count(u.Calls, "call"), u.Tool)
	case UnjudgedNatural:
		return fmt.Sprintf("%s not judged: %s is declared idempotent (natural: on endpoint %s)", plural.Count(u.Calls, "call"), u.Tool, u.Endpoint)
	}
	return fmt.Sprintf("%s of %s not judged: verdict: off", plural.Count(u.Calls, "call"), u.Tool)
}

// AddUnjudged counts u's calls with the unjudged calls of its endpoint, tool and reason.
func (m *Metrics) AddUnjudged(u Unjudged) {
	for i := range m.Unjudged {
		o := &m.Unjudged[i]
		if o.Endpoint == u.Endpoint && o.Tool == u.Tool && o.Reason == u.Reason {
			o.Calls += u.Calls
			return
		}
	}
	m.Unjudged = append(m.Unjudged, u)
	sort.SliceStable(m.Unjudged, func(a, b int) bool {
		x, y := m.Unjudged[a], m.Unjudged[b]
		if x.Tool != y.Tool {
			return x.Tool < y.Tool
		}
		return x.Reason < y.Reason
	})
}

// UnjudgedCalls counts the calls the verdict did not judge, for any reason.
func (m Metrics) UnjudgedCalls() int {
	n := 0
	for _, u := range m.Unjudged {
		n += u.Calls
	}
	return n
}

// NoneJudged reports whether calls with a key were made and the verdict judged not one of them
// because every one was exempt (declared idempotent or verdict: off): the run's "0 duplicate
// executions" then says nothing.
func (m Metrics) NoneJudged() bool {
	exempt := 0
	for _, u := range m.Unjudged {
		if u.Reason != UnjudgedNoID {
			exempt += u.Calls
		}
	}
	return m.Keyed > 0 && exempt >= m.Keyed
}

// NoID counts the calls the verdict could not judge because their answers carry no id.
func (m Metrics) NoID() int {
	n := 0
	for _, u := range m.Unjudged {
		if u.Reason == UnjudgedNoID {
			n += u.Calls
		}
	}
	return n
}
