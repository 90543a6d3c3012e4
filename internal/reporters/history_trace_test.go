package reporters

import (
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/result"
)

// TestHistoryTraceColumn: calls that carried a traceparent show their trace id in a trace
// column, "-" for a call without one; a history without trace ids has no such column.
func TestHistoryTraceColumn(t *testing.T) {
	tr := &result.Trial{Calls: []result.Call{
		{Step: "burst", Copy: 1, Attempt: 1, Key: "k", Outcome: "ok", Status: 200, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{Step: "burst", Copy: 2, Attempt: 1, Key: "k", Outcome: "ok", Status: 200},
	}}
	lines := strings.Split(History(tr), "\n")
	if f := strings.Fields(lines[0]); f[len(f)-2] != "trace" || f[len(f)-1] != "error" {
		t.Errorf("header %q: want a trace column before error", lines[0])
	}
	if f := strings.Fields(lines[1]); f[len(f)-1] != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("row %q: want its trace id last", lines[1])
	}
	if f := strings.Fields(lines[2]); f[len(f)-1] != "-" {
		t.Errorf("row %q: want - for a call without a trace id", lines[2])
	}
	tr.Calls[0].TraceID = ""
	if h := History(tr); strings.Contains(h, "trace") {
		t.Errorf("a history without trace ids has a trace column:\n%s", h)
	}
}
