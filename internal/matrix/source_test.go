package matrix_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/check"
	"github.com/idemtest/idemtest/internal/check/battery"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/sweep"
)

// Both producers fill the one view every reporter renders.
var (
	_ matrix.Source = (*check.Report)(nil)
	_ matrix.Source = (*sweep.Report)(nil)
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestCheckMatrix: a battery's report as a matrix: a row per tool, cells labelled and named for
// their notes and test cases, the evidence typed, a ✗ the baseline lists known, a skipped tool's
// why and output on its row, the diagnoses above and the tally below.
func TestCheckMatrix(t *testing.T) {
	ev := matrix.Evidences{{Kind: matrix.EvidenceSinks, Names: []string{"pp"}}, {Kind: matrix.EvidenceAnswers}}
	rep := &check.Report{Endpoint: "refunds", Checks: []string{battery.Replay, battery.Concurrent}, Start: t0, Duration: 1500 * time.Millisecond,
		Diagnoses:   []string{"no tool replayed anything"},
		Regressions: &baseline.Result{Known: []baseline.Failure{{Subject: baseline.CheckSubject("issue_refund", battery.Replay)}}},
		Rows: []*check.Row{
			{Tool: "issue_refund", Cells: []*battery.Cell{
				{Check: battery.Replay, Status: matrix.Fail, Reason: "1 duplicate execution(s)", Evidence: ev, Details: []string{"history"}, Duration: time.Second},
				{Check: battery.Concurrent, Status: matrix.Pass, Reason: "one execution per key"},
			}},
			{Tool: "cancel", Skipped: "no arguments", Cells: []*battery.Cell{
				{Check: battery.Replay, Status: matrix.Skip, Reason: "no arguments", Details: []string{"service said no"}},
				{Check: battery.Concurrent, Status: matrix.Skip, Reason: "no arguments"},
			}},
		}}
	m := rep.Matrix()
	want := matrix.Matrix{Title: "idemtest check refunds", Corner: "TOOL", Columns: rep.Checks,
		Preamble: []matrix.Line{{Text: "diagnosis: no tool replayed anything", Tone: matrix.Warning}},
		Rows: []matrix.Row{
			{Name: "issue_refund", Cells: []matrix.Cell{
				{Column: "replay", Label: "issue_refund replay", Case: "replay", Class: "refunds.issue_refund", Status: matrix.Fail,
					Reason: "1 duplicate execution(s)", Details: []string{"history"}, Evidence: ev, Duration: time.Second, Known: true},
				{Column: "concurrent", Label: "issue_refund concurrent", Case: "concurrent", Class: "refunds.issue_refund", Status: matrix.Pass, Reason: "one execution per key"},
			}},
			{Name: "cancel", Skipped: "no arguments", Details: []string{"service said no"}, Cells: []matrix.Cell{
				{Column: "replay", Label: "cancel replay", Case: "replay", Class: "refunds.cancel", Status: matrix.Skip, Reason: "no arguments", Details: []string{"service said no"}},
				{Column: "concurrent", Label: "cancel concurrent", Case: "concurrent", Class: "refunds.cancel", Status: matrix.Skip, Reason: "no arguments"},
			}},
		},
		Tally: "2 tools, 2 checks: 1 ✓ 1 ✗ 0 ⚠ 2 – 0 ?  1.5s",
		Start: t0, Duration: 1500 * time.Millisecond, Failed: true}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("Matrix() =\n%+v\nwant\n%+v", m, want)
	}
}

// TestSweepMatrix: a sweep as a matrix: run 0 leads, the carried values and the evidence above,
// a row per call of the trace, a read-only call's cells "–" and a run the interrupt came before
// blank, neither counted; one test suite, named by the trace.
func TestSweepMatrix(t *testing.T) {
	rep := &sweep.Report{Trace: "agent.jsonl", Endpoint: "refunds", Faults: sweep.Faults, Start: t0, Duration: 2 * time.Second, Interrupted: true,
		Calls:    []sweep.CallInfo{{Seq: 1, Tool: "list_refunds"}, {Seq: 2, Tool: "issue_refund", Mutating: true}},
		Carried:  []sweep.Carry{{From: 2, Path: "refundId", To: 3, Arg: "id"}},
		Evidence: []string{"verdict", "state (list_refunds)"},
		Baseline: &sweep.Cell{Fault: sweep.Clean, Status: matrix.Pass, Reason: "the trace replayed"},
		Cells: []*sweep.Cell{
			{Seq: 2, Tool: "issue_refund", Fault: sweep.LostResponse, Status: matrix.Fail, Reason: "diverged", Details: []string{"d"}, Duration: time.Second},
		}}
	m := rep.Matrix()
	blank, ro := matrix.Cell{Status: matrix.Skip, Placeholder: " "}, matrix.Cell{Status: matrix.Skip, Placeholder: "–"}
	var roRow, callRow []matrix.Cell
	for _, f := range sweep.Faults {
		c := ro
		c.Column = f
		roRow = append(roRow, c)
		c = blank
		c.Column = f
		callRow = append(callRow, c)
	}
	callRow[0] = matrix.Cell{Column: sweep.LostResponse, Label: "call 2 issue_refund lost-response", Case: "call 2 issue_refund: lost-response",
		Class: "refunds.issue_refund", Status: matrix.Fail, Reason: "diverged", Details: []string{"d"}, Duration: time.Second}
	want := matrix.Matrix{Title: "idemtest sweep agent.jsonl", Corner: "CALL", Columns: sweep.Faults, Suite: "agent.jsonl",
		Lead: &matrix.Cell{Column: sweep.Clean, Label: "run 0 (no fault)", Case: "run 0: the trace replayed without a fault", Class: "refunds",
			Status: matrix.Pass, Reason: "the trace replayed"},
		Preamble: []matrix.Line{
			{Text: "carried: call 2's answer refundId → call 3's argument id"},
			{Text: "evidence: verdict, state (list_refunds)", Tone: matrix.Muted},
		},
		Rows:  []matrix.Row{{Name: "1 list_refunds", Cells: roRow}, {Name: "2 issue_refund", Cells: callRow}},
		Tally: "2 calls, 1 faulty run: 0 ✓ 1 ✗ 0 ?",
		Start: t0, Duration: 2 * time.Second, Interrupted: true, Failed: true}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("Matrix() =\n%+v\nwant\n%+v", m, want)
	}
	if got := m.Rows[1].Cells[1].Symbol() + m.Rows[0].Cells[0].Symbol() + m.Rows[1].Cells[0].Symbol(); got != " –✗" {
		t.Errorf("symbols %q, want %q", got, " –✗")
	}
}
