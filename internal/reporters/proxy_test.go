package reporters_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/reporters/junit"
	"github.com/idemtest/idemtest/internal/reporters/reporterstest"
	"github.com/idemtest/idemtest/internal/reporters/terminal"
	"github.com/idemtest/idemtest/internal/trace"
)

// refund is a trace line of a mutating issue_refund of 10 with the key in its arguments.
func refund(seq int, key, fault string, outcome outcome.Outcome) trace.Call {
	args, _ := json.Marshal(map[string]any{"accountId": "acct_1", "amount": 10, "idempotencyKey": key})
	return trace.Call{Seq: seq, Tool: "issue_refund", Args: args, Key: key, KeyCarrier: "arg idempotencyKey",
		Mutating: true, Outcome: outcome, Fault: fault, Result: json.RawMessage(`{"refundId":"re_1"}`)}
}

// TestProxyReportsAreValid: the proxy's verdict on an agent that retried with a new key (a key
// holding a byte XML cannot carry) is valid JUnit and round-trips as JSON.
func TestProxyReportsAreValid(t *testing.T) {
	v := judge([]trace.Call{refund(1, "s-\x01", "lose-response", outcome.Info), refund(2, "s-2", "", outcome.OK)}, agentverdict.JudgeOptions{})
	var x bytes.Buffer
	if err := junit.WriteProxy(&x, v); err != nil {
		t.Fatal(err)
	}
	var doc junit.JUnitTestSuites
	if err := xml.Unmarshal(x.Bytes(), &doc); err != nil {
		t.Fatalf("junit is not valid XML: %v\n%s", err, x.String())
	}
	if s := doc.Suites[0]; s.Tests != 4 || s.Failures != 1 || doc.Tests != 4 || doc.Failures != 1 {
		t.Errorf("junit tests=%d failures=%d (root %d %d), want 4 and 1", s.Tests, s.Failures, doc.Tests, doc.Failures)
	}
	var js bytes.Buffer
	if err := jsonreport.WriteProxy(&js, v); err != nil {
		t.Fatal(err)
	}
	var back agentverdict.Verdict
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Violations != 1 || back.Findings[0].Check != agentverdict.CheckRetrySameKey {
		t.Errorf("json = %s (%v)", js.String(), err)
	}
	reporterstest.ValidateJUnit(t, x.Bytes())
}

// TestProxyReportsOfNothingJudged: a session without a mutating call skips every check, a
// failed tool server is one more test case in error, in reports that stay valid; a pass without
// a fault says that no retry was tested.
func TestProxyReportsOfNothingJudged(t *testing.T) {
	readOnly := trace.Call{Seq: 1, Tool: "list_refunds", Outcome: outcome.OK}
	failed := judge(nil, agentverdict.JudgeOptions{})
	failed.Error = "tool server \"sh\" never answered the agent's initialize request; the end of its stderr:\n  boom"
	for _, tc := range []struct {
		name                   string
		v                      agentverdict.Verdict
		tests, errors, skipped int
		result, last           string
	}{
		{"no call", judge(nil, agentverdict.JudgeOptions{}), 4, 0, 4, "nothing-judged", "nothing judged: the agent made no tool call\n"},
		{"read-only calls", judge([]trace.Call{readOnly}, agentverdict.JudgeOptions{}), 4, 0, 4, "nothing-judged", "nothing judged: the agent made no mutating tool call (1 read-only)\n"},
		{"no fault injected", judge([]trace.Call{refund(1, "s-1", "", outcome.OK)}, agentverdict.JudgeOptions{}), 4, 0, 0, "pass", "PASS: the agent kept its keys (no fault was injected: no retry was tested)\n"},
		{"a failed tool server", failed, 5, 1, 4, "error", "ERROR: tool server \"sh\" never answered the agent's initialize request; the end of its stderr:\n  boom\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var x, js, text bytes.Buffer
			if err := errors.Join(junit.WriteProxy(&x, tc.v), jsonreport.WriteProxy(&js, tc.v), terminal.WriteProxy(&text, tc.v)); err != nil {
				t.Fatal(err)
			}
			var doc junit.JUnitTestSuites
			if err := xml.Unmarshal(x.Bytes(), &doc); err != nil {
				t.Fatalf("junit is not valid XML: %v\n%s", err, x.String())
			}
			if s := doc.Suites[0]; s.Tests != tc.tests || s.Errors != tc.errors || s.Skipped != tc.skipped || s.Failures != 0 {
				t.Errorf("junit tests=%d errors=%d skipped=%d failures=%d, want %d %d %d 0", s.Tests, s.Errors, s.Skipped, s.Failures, tc.tests, tc.errors, tc.skipped)
			}
			if !strings.Contains(js.String(), `"result": "`+tc.result+`"`) {
				t.Errorf("json lacks result %q:\n%s", tc.result, js.String())
			}
			if !strings.HasSuffix(text.String(), tc.last) || tc.result != "pass" && strings.Contains(text.String(), "PASS") {
				t.Errorf("text does not end with %q:\n%s", tc.last, text.String())
			}
			reporterstest.ValidateJUnit(t, x.Bytes())
		})
	}
}

// judge is agentverdict.Judge with a context that never ends: its error is always nil.
func judge(calls []trace.Call, opts agentverdict.JudgeOptions) agentverdict.Verdict {
	v, _ := agentverdict.Judge(context.Background(), calls, opts)
	return v
}
