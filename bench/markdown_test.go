package main

import (
	"strings"
	"testing"
)

// TestHandMeasuredSectionsSurvive: regenerating BENCHMARKS.md keeps the sections measured by
// hand (their heading says "not by ./bench") and drops the generated ones it rewrites.
func TestHandMeasuredSectionsSurvive(t *testing.T) {
	kept := handMeasured("../BENCHMARKS.md")
	if !strings.Contains(kept, "\n## idemtest check: a full battery per tool (measured by hand, not by ./bench)\n") {
		t.Errorf("the hand-measured check section is lost:\n%s", kept)
	}
	if strings.Contains(kept, "## Detection rate") {
		t.Errorf("a generated section is kept twice:\n%s", kept)
	}
}
