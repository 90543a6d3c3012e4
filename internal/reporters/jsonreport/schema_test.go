package jsonreport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/reporters/reporterstest"
	"github.com/idemtest/idemtest/internal/reportschema/schemacheck"
	"github.com/idemtest/idemtest/internal/safejson"
	"github.com/idemtest/idemtest/internal/sweep"
	"github.com/idemtest/idemtest/internal/toolset"
	"github.com/idemtest/idemtest/internal/trace"
)

// hostileText is what a server or an agent may put in any string idemtest reports: terminal
// escapes, C1 controls, DEL, a bidi override, a line separator, a newline, bytes that are not
// UTF-8 and a forged workflow command.
const hostileText = "re\x1b]0;pwned\x07\u009b31m\x7f\u202eevil\u2028\n::error::x\xff"

// outputs are every writer of a machine-readable report, each fed reports recorded from real runs
// (or, where none is recorded, one built with every string field holding text).
func outputs(t *testing.T, text string) map[string]func() ([]byte, error) {
	write := func(f func(*bytes.Buffer) error) func() ([]byte, error) {
		return func() ([]byte, error) {
			var buf bytes.Buffer
			err := f(&buf)
			return buf.Bytes(), err
		}
	}
	run := reporterstest.SampleReport()
	for _, r := range run.Scenarios {
		r.Scenario.Name = text
		if r.Failure != nil {
			r.Failure.Message, r.Failure.Explanation = text, append(r.Failure.Explanation, text)
		}
		if r.FailedTrial != nil {
			for i := range r.FailedTrial.Calls {
				c := &r.FailedTrial.Calls[i]
				c.Key, c.Tool, c.Error, c.Result, c.Args = text, text, text, map[string]any{text: text}, map[string]any{text: text}
			}
		}
	}
	chk := reporterstest.RecordedCheck(t)
	chk.Diagnoses = append(chk.Diagnoses, text)
	chk.Rows[0].Tool, chk.Rows[0].Cells[0].Reason = text, text
	chk.Rows[0].Cells[0].Details = append(chk.Rows[0].Cells[0].Details, text)
	sw := &sweep.Report{Trace: text, Endpoint: text, Faults: sweep.Faults, Calls: []sweep.CallInfo{{Seq: 1, Tool: text, Mutating: true}},
		Carried: []sweep.Carry{{From: 1, Path: text, To: 2, Arg: text, Value: text}}, Evidence: []string{text},
		Baseline: &sweep.Cell{Status: matrix.Pass, Reason: text, Duration: time.Millisecond},
		Cells:    []*sweep.Cell{{Seq: 1, Tool: text, Fault: sweep.LostResponse, Status: matrix.Fail, Reason: text, Details: []string{text}}},
		Start:    reporterstest.T0, Duration: time.Second}
	v, _ := agentverdict.Judge(context.Background(), []trace.Call{
		{Seq: 1, Tool: text, Key: text, KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: outcome.Info, Fault: "lose-response", Args: json.RawMessage(`{"a":1}`)},
		{Seq: 2, Tool: text, Key: text + "2", KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: outcome.OK, Args: json.RawMessage(`{"a":1}`)},
	}, agentverdict.JudgeOptions{})
	v.Error = text
	tools := []toolset.ToolInfo{{Tool: endpoint.Tool{Name: text, Description: text, InputSchema: map[string]any{"type": "object", "description": text}},
		KeyCarrier: "arg idempotencyKey", AcceptsKey: "no", Mutating: true}}
	return map[string]func() ([]byte, error){
		"run":   write(func(b *bytes.Buffer) error { return jsonreport.Write(b, run, "dev") }),
		"check": write(func(b *bytes.Buffer) error { return jsonreport.WriteCheck(b, chk, "dev") }),
		"sweep": write(func(b *bytes.Buffer) error { return jsonreport.WriteSweep(b, sw, "dev") }),
		"proxy": write(func(b *bytes.Buffer) error { return jsonreport.WriteProxy(b, v) }),
		"tools": write(func(b *bytes.Buffer) error { return jsonreport.WriteTools(b, tools) }),
		"trace": write(func(b *bytes.Buffer) error {
			w, err := trace.NewWriter(b, trace.Header{Endpoint: text, Transport: trace.MCPStdio, Started: reporterstest.T0})
			if err != nil {
				return err
			}
			return w.Write(trace.Call{Seq: 1, Tool: text, Key: text, KeyCarrier: "meta idempotencyKey", Outcome: outcome.OK,
				Args: json.RawMessage(`{"note":"` + "\u202e\x7f" + `"}`), Result: json.RawMessage(`"` + "\u009b" + `"`), Error: text, Fault: text})
		}),
	}
}

// TestOutputsValidate: every writer's output, from recorded and hostile reports alike, parses
// with a JSON parser, validates against its schema and holds no hostile character raw.
func TestOutputsValidate(t *testing.T) {
	for _, text := range []string{"plain", hostileText} {
		for kind, write := range outputs(t, text) {
			t.Run(kind+"/"+text[:2], func(t *testing.T) {
				b, err := write()
				if err != nil {
					t.Fatal(err)
				}
				if err := schemacheck.Validate(kind, b); err != nil {
					t.Errorf("%v\n%.2000s", err, b)
				}
				for i, r := range string(b) {
					if safejson.Hostile(r) && r != '\n' {
						t.Fatalf("raw %U at byte %d: %q", r, i, b[max(0, i-40):min(len(b), i+40)])
					}
				}
			})
		}
	}
}

// TestRecordedReportsValidate: the reports recorded from real runs and the goldens validate
// against their schemas, as written and as written again from what Read makes of them.
func TestRecordedReportsValidate(t *testing.T) {
	for _, rc := range reporterstest.Recordings {
		t.Run(rc.Name, func(t *testing.T) {
			var js bytes.Buffer
			if err := jsonreport.Write(&js, reporterstest.Recorded(t, rc.Name), "dev"); err != nil {
				t.Fatal(err)
			}
			if err := schemacheck.Validate("run", js.Bytes()); err != nil {
				t.Error(err)
			}
		})
	}
	for name, kind := range map[string]string{"testdata/report.json": "run", reporterstest.Testdata("check.json"): "check"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := schemacheck.Validate(kind, b); err != nil {
				t.Error(err)
			}
		})
	}
}
