package result

import (
	"fmt"
	"strings"
)

// Coverage says which mutating tools of one endpoint nothing judged (DESIGN §12): no scenario
// of a run called them, or check skipped them.
type Coverage struct {
	Endpoint string `json:"endpoint"`
	// Mutating counts the endpoint's mutating tools.
	Mutating int `json:"mutating"`
	// Uncovered are the mutating tools nothing judged and no exemption covers, sorted, each
	// with why when check skipped it.
	Uncovered []Uncovered `json:"uncovered"`
	// Exempt are the uncovered tools the config exempts, with the reason it gives.
	Exempt []Uncovered `json:"exempt,omitempty"`
	// Error is why the endpoint's tools could not be listed ("" when they were).
	Error string `json:"error,omitempty"`
}

// Uncovered is one mutating tool nothing judged, with the reason it was skipped or exempted.
type Uncovered struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason,omitempty"`
}

// Gaps reports whether any endpoint has a mutating tool nothing judged and no exemption
// covers, or tools that could not be listed: what --require-coverage fails on.
func Gaps(cov []Coverage) bool {
	for _, c := range cov {
		if len(c.Uncovered) > 0 || c.Error != "" {
			return true
		}
	}
	return false
}

// GapsError names every gap, for --require-coverage to fail with.
func GapsError(cov []Coverage) error {
	var parts []string
	for _, c := range cov {
		if c.Error != "" {
			parts = append(parts, fmt.Sprintf("endpoint %s: its tools could not be listed (%s)", c.Endpoint, c.Error))
		}
		for _, u := range c.Uncovered {
			parts = append(parts, c.Endpoint+"."+u.Tool)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("--require-coverage: mutating tools nothing tested: %s (add a scenario that calls each, or exempt it with a reason under coverage.exempt in idemtest.yaml)", strings.Join(parts, ", "))
}
