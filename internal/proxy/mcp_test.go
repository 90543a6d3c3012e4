package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
	"github.com/idemtest/idemtest/internal/proxy/fault"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/trace"
)

// These drive the message inspection directly; the end-to-end tests use real MCP clients.

func TestMCPSessionKeyCarriers(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  scenario.KeySpec
		msg  string
		want string
	}{
		{"argument", scenario.KeySpec{Arg: "idempotencyKey"}, `{"name":"t","arguments":{"idempotencyKey":"k1"}}`, "k1"},
		{"meta", scenario.KeySpec{Meta: "idempotencyKey"}, `{"name":"t","arguments":{"idempotencyKey":"no"},"_meta":{"idempotencyKey":"k2"}}`, "k2"},
		{"none", scenario.KeySpec{Arg: "idempotencyKey"}, `{"name":"t","arguments":{}}`, ""},
		{"a number", scenario.KeySpec{Arg: "requestId"}, `{"name":"t","arguments":{"requestId":42}}`, "42"},
		{"a number past float64", scenario.KeySpec{Arg: "requestId"}, `{"name":"t","arguments":{"requestId":12345678901234567891}}`, "12345678901234567891"},
		{"a number past float64 in _meta", scenario.KeySpec{Meta: "requestId"}, `{"name":"t","arguments":{},"_meta":{"requestId":12345678901234567891}}`, "12345678901234567891"},
		{"an object", scenario.KeySpec{Arg: "k"}, `{"name":"t","arguments":{"k":{ "a" : 1 }}}`, `{"a":1}`},
		{"null", scenario.KeySpec{Arg: "k"}, `{"name":"t","arguments":{"k":null}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := NewRecorder(Options{Key: tc.key, Mutating: []string{"t"}})
			s := newMCPSession(rec)
			s.fromAgent([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tc.msg + "}\n"))
			calls, _ := rec.Close()
			if calls.Len() != 1 || calls.At(0).Key != tc.want || calls.At(0).KeyCarrier != tc.key.String() {
				t.Errorf("calls = %+v, want key %q", calls, tc.want)
			}
		})
	}
}

// traced reads the calls a recorder wrote to buf, in the agent's order.
func traced(t *testing.T, buf *bytes.Buffer) []trace.Call {
	t.Helper()
	_, calls, err := trace.Read(context.Background(), buf)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].Seq < calls[j].Seq })
	return calls
}

func TestMCPSessionFlow(t *testing.T) {
	var buf bytes.Buffer
	tw, err := trace.NewWriter(&buf, trace.Header{Transport: trace.MCPStdio})
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder(Options{Key: scenario.KeySpec{Arg: "idempotencyKey"}, Trace: tw,
		Faults: []fault.Fault{{Kind: fault.Error, Status: 503, Tool: "issue_refund", N: 2}, {Kind: fault.LoseResponse, Tool: "issue_refund", N: 3}}})
	s := newMCPSession(rec)

	// A batch is not inspected.
	if act := s.fromAgent([]byte(`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`)); act.reply != nil || act.then != nil {
		t.Errorf("batch: %+v", act)
	}
	// The first call makes the proxy list tools itself, with the protocol's _meta copied.
	act := s.fromAgent([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"issue_refund","arguments":{"idempotencyKey":"a"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":1}}}`))
	if !strings.Contains(string(act.then), `"method":"tools/list"`) || !strings.Contains(string(act.then), `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`) {
		t.Fatalf("own tools/list = %s", act.then)
	}
	// A session ends only after the proxy's own list is answered, every page of it.
	listed := s.ownListed()
	unsettled := func(page string) {
		t.Helper()
		select {
		case <-listed:
			t.Errorf("%s: the own tools/list counts as answered", page)
		default:
		}
	}
	unsettled("before its answer")
	// Its answer, in two pages, is not for the agent.
	deliver, then := s.fromServer([]byte(`{"jsonrpc":"2.0","id":"idemtest-proxy-tools-1","result":{"tools":[{"name":"list_refunds","annotations":{"readOnlyHint":true}}],"nextCursor":"p2"}}`))
	if deliver || !strings.Contains(string(then), `"cursor":"p2"`) {
		t.Fatalf("page 1: deliver %v, then %s", deliver, then)
	}
	unsettled("after page 1 of 2")
	if deliver, then := s.fromServer([]byte(`{"jsonrpc":"2.0","id":"idemtest-proxy-tools-2","result":{"tools":[{"name":"issue_refund"}]}}`)); deliver || then != nil {
		t.Fatalf("page 2: deliver %v, then %s", deliver, then)
	}
	select {
	case <-listed:
	default:
		t.Error("the own tools/list is answered, but the session would still wait for it")
	}
	// The call's answer is delivered; a replay marker is read.
	if deliver, _ := s.fromServer([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"refundId\":\"re_1\"}"}],"_meta":{"idempotentReplayed":true}}}`)); !deliver {
		t.Error("the answer to call 1 was not delivered")
	}
	// The second call gets the injected error without being forwarded.
	act = s.fromAgent([]byte(`{"jsonrpc":"2.0","id":"x2","method":"tools/call","params":{"name":"issue_refund","arguments":{"idempotencyKey":"a"}}}`))
	var reply struct {
		ID    string `json:"id"`
		Error struct {
			Code int `json:"code"`
			Data struct {
				Status int `json:"status"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(act.reply, &reply); err != nil || reply.ID != "x2" || reply.Error.Code != -32000 || reply.Error.Data.Status != 503 {
		t.Errorf("error reply = %s (%v)", act.reply, err)
	}
	// The third loses its answer; the agent cancels it.
	s.fromAgent([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"issue_refund","arguments":{"idempotencyKey":"a"}}}`))
	s.fromAgent([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`))
	if deliver, _ := s.fromServer([]byte(`{"jsonrpc":"2.0","id":3,"result":{"structuredContent":{"refundId":"re_1"},"isError":false}}`)); deliver {
		t.Error("a lost answer was delivered")
	}
	// A read-only call that fails.
	s.fromAgent([]byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_refunds","arguments":{}}}`))
	s.fromServer([]byte(`{"jsonrpc":"2.0","id":4,"result":{"isError":true,"content":[{"type":"text","text":"boom"}]}}`))
	// A call the server never answers.
	s.fromAgent([]byte(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"issue_refund","arguments":{"idempotencyKey":"b"}}}`))

	kept, err := rec.Close()
	if err != nil {
		t.Fatal(err)
	}
	calls := traced(t, &buf)
	type row struct {
		tool     string
		mutating bool
		outcome  outcome.Outcome
		replayed bool
		fault    string
		result   string
		errText  string
	}
	want := []row{
		{"issue_refund", true, outcome.OK, true, "", `{"refundId":"re_1"}`, ""},
		{"issue_refund", true, outcome.Fail, false, "error:503", "", "injected fault"},
		{"issue_refund", true, outcome.Info, false, "lose-response", `{"refundId":"re_1"}`, "withheld from the agent"},
		{"list_refunds", false, outcome.Fail, false, "", "", "tool error: boom"},
		{"issue_refund", true, outcome.Info, false, "", "", "no answer before the session ended"},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d calls, want %d: %+v", len(calls), len(want), calls)
	}
	for i, w := range want {
		c := calls[i]
		got := row{c.Tool, c.Mutating, c.Outcome, c.Replayed, c.Fault, "", ""}
		if w.result != "" && string(c.Result) != w.result {
			t.Errorf("call %d result = %s, want %s", c.Seq, c.Result, w.result)
		}
		if !strings.Contains(c.Error, w.errText) {
			t.Errorf("call %d error = %q, want it to contain %q", c.Seq, c.Error, w.errText)
		}
		w.result, w.errText = "", ""
		if got != w || c.Seq != i+1 {
			t.Errorf("call %d = %+v, want %+v", c.Seq, got, w)
		}
		// The verdict keeps of the call what it reads, and its digest.
		if k := kept.At(i); k != agentverdict.Digest(c, nil) {
			t.Errorf("call %d kept as %+v, want %+v", c.Seq, k, agentverdict.Digest(c, nil))
		}
	}
}

// TestMCPSessionGotGoing: a session the agent opened is an error unless its handshake
// completed; an agent that never said a word, or one whose server is to blame, is not.
func TestMCPSessionGotGoing(t *testing.T) {
	const (
		initialize  = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`
		answer      = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}`
		refused     = `{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"unsupported"}}`
		initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
		listTools   = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		progress    = `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`
	)
	type msg struct {
		agent bool
		raw   string
		// lost, for a server message, is a write to the agent that failed.
		lost bool
	}
	for _, tc := range []struct {
		name  string
		msgs  []msg
		stage string
	}{
		{"the agent never said a word", nil, ""},
		{"the handshake completed", []msg{{true, initialize, false}, {false, answer, false}, {true, initialized, false}}, ""},
		{"a request after the answer, without notifications/initialized", []msg{{true, initialize, false}, {false, answer, false}, {true, listTools, false}}, ""},
		{"a call without any handshake", []msg{{true, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t"}}`, false}}, ""},
		{"the server never answered (its fault, not the agent's)", []msg{{true, initialize, false}}, ""},
		{"the server refused (its fault, not the agent's)", []msg{{true, initialize, false}, {false, refused, false}}, ""},
		{"server/discover answered, nothing after it", []msg{{true, `{"jsonrpc":"2.0","id":0,"method":"server/discover"}`, false}, {false, answer, false}}, ""},
		{"server/discover answer lost", []msg{{true, `{"jsonrpc":"2.0","id":0,"method":"server/discover"}`, false}, {false, answer, true}}, StageUndelivered},
		{"answered, never confirmed", []msg{{true, initialize, false}, {false, answer, false}}, StageNoInitialized},
		{"a notification before the answer does not count", []msg{{true, initialize, false}, {true, progress, false}, {false, answer, false}}, StageNoInitialized},
		{"the answer could not be delivered", []msg{{true, initialize, false}, {false, answer, true}}, StageUndelivered},
		{"another answer lost does not count", []msg{{true, initialize, false}, {false, `{"jsonrpc":"2.0","id":7,"result":{}}`, true}, {false, answer, false}, {true, initialized, false}}, ""},
		{"no initialize, only notifications", []msg{{true, progress, false}}, ""},
		{"no initialize, only garbage", []msg{{true, `not json`, false}}, StageNoInitialize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newMCPSession(NewRecorder(Options{Key: scenario.KeySpec{Arg: "k"}, Mutating: []string{}}))
			for _, m := range tc.msgs {
				if m.agent {
					s.fromAgent([]byte(m.raw))
					continue
				}
				s.fromServer([]byte(m.raw))
				if m.lost {
					s.undeliverable([]byte(m.raw), errors.New("write: broken pipe"))
				}
			}
			se := s.sessionError()
			switch {
			case tc.stage == "" && se != nil:
				t.Errorf("session error %q (%s), want none", se.Stage, se)
			case tc.stage != "" && (se == nil || se.Stage != tc.stage):
				t.Errorf("session error %v, want stage %s", se, tc.stage)
			case se != nil && !strings.HasPrefix(se.Error(), "the agent's MCP session never got going: "):
				t.Errorf("message %q", se)
			}
		})
	}
}

// TestClassifyRefusals: a tools/call answer is a refusal however it is shaped, as the runner
// reads it: a JSON-RPC error, isError, or an error-shaped success in structuredContent or in
// the text; an ordinary answer that happens to hold a status is an execution.
func TestClassifyRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		want      outcome.Outcome
	}{
		{"json-rpc error", `{"id":1,"error":{"code":-32000,"message":"duplicate request"}}`, outcome.Fail},
		{"isError", `{"id":1,"result":{"isError":true,"content":[{"type":"text","text":"duplicate request"}]}}`, outcome.Fail},
		{"status error in structuredContent", `{"id":1,"result":{"structuredContent":{"status":"error","message":"duplicate request"}}}`, outcome.Fail},
		{"success false in text", `{"id":1,"result":{"content":[{"type":"text","text":"{\"success\":false,\"message\":\"in progress\"}"}]}}`, outcome.Fail},
		{"lone error", `{"id":1,"result":{"structuredContent":{"error":"key reused with another payload"}}}`, outcome.Fail},
		{"a refund that executed", `{"id":1,"result":{"structuredContent":{"refundId":"re_1","status":"succeeded"}}}`, outcome.OK},
		{"a failed refund is still an execution", `{"id":1,"result":{"structuredContent":{"refundId":"re_1","status":"failed"}}}`, outcome.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m rpcMsg
			if err := json.Unmarshal([]byte(tc.msg), &m); err != nil {
				t.Fatal(err)
			}
			if a := classify(m); a.Outcome != tc.want {
				t.Errorf("outcome %s (%s), want %s", a.Outcome, a.Error, tc.want)
			}
		})
	}
}
