package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/endpoint"
)

// rpcMsg is the part of a JSON-RPC message the proxy looks at; the message itself is forwarded
// as it came.
type rpcMsg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// parseMsg decodes one message; a batch or anything else that is not an object is not
// inspected (and forwarded unchanged).
func parseMsg(raw []byte) (rpcMsg, bool) {
	var m rpcMsg
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &m) != nil {
		return m, false
	}
	return m, true
}

// idKey is a request id as a map key: its JSON text (1 and "1" are different ids).
func (m rpcMsg) idKey() string {
	id := string(bytes.TrimSpace(m.ID))
	if id == "null" {
		return ""
	}
	return id
}

// flight is an agent request whose answer the proxy waits for.
type flight struct {
	list bool // tools/list
	own  bool // sent by the proxy itself: the agent never sees the answer
	p    *Pending
}

// mcpSession follows one MCP conversation between an agent and a server: it records tools/call
// requests and their answers, learns readOnlyHint from tools/list answers, and applies faults.
type mcpSession struct {
	rec *Recorder

	mu       sync.Mutex
	inflight map[string]*flight
	listed   int  // tools/list requests of the proxy's own
	seen     bool // a tools/list request went to the server
	// protoMeta are the protocol's own _meta entries of the agent's requests (protocol
	// version, client info: newer MCP revisions send them on every request), copied to the
	// proxy's own requests.
	protoMeta map[string]any
}

// ownList returns a tools/list request of the proxy's own (page cursor, "" for the first).
func (s *mcpSession) ownList(cursor string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = true
	s.listed++
	id := fmt.Sprintf("idemtest-proxy-tools-%d", s.listed)
	s.inflight[`"`+id+`"`] = &flight{list: true, own: true}
	params := map[string]any{}
	if cursor != "" {
		params["cursor"] = cursor
	}
	if len(s.protoMeta) > 0 {
		params["_meta"] = s.protoMeta
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
	return append(b, '\n')
}

func newMCPSession(rec *Recorder) *mcpSession {
	return &mcpSession{rec: rec, inflight: map[string]*flight{}}
}

// agentAction says what to do with a message from the agent.
type agentAction struct {
	// reply, when set, answers the agent instead of forwarding.
	reply []byte
	// delay holds the message back before forwarding.
	delay time.Duration
	// then is sent to the server after the message.
	then []byte
}

// fromAgent inspects a message the agent sent.
func (s *mcpSession) fromAgent(raw []byte) agentAction {
	m, ok := parseMsg(raw)
	if !ok || m.Method == "" {
		return agentAction{}
	}
	id := m.idKey()
	switch {
	case m.Method == "tools/list" && id != "":
		s.mu.Lock()
		s.inflight[id] = &flight{list: true}
		s.seen = true
		s.mu.Unlock()
	case m.Method == "tools/call" && id != "":
		var params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Meta      map[string]any  `json:"_meta"`
		}
		_ = json.Unmarshal(m.Params, &params)
		p := s.rec.Begin(params.Name, params.Arguments, s.key(params.Arguments, params.Meta))
		var then []byte
		s.mu.Lock()
		ask := !s.seen && s.rec.NeedsTools()
		if ask {
			s.protoMeta = map[string]any{}
			for k, v := range params.Meta {
				if strings.HasPrefix(k, "io.modelcontextprotocol/") {
					s.protoMeta[k] = v
				}
			}
		}
		s.mu.Unlock()
		if ask {
			// Agents need not list tools before calling them; the proxy asks for itself, to
			// know which tools are read-only.
			then = s.ownList("")
		}
		switch p.Fault.Kind {
		case Error:
			msg := fmt.Sprintf("idemtest injected fault: %s (status %d, the call was not forwarded)", p.Fault, p.Fault.Status)
			s.rec.Finish(p, Answer{Outcome: endpoint.Fail, Status: p.Fault.Status, Error: "json-rpc error -32000: " + msg})
			reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID,
				"error": map[string]any{"code": -32000, "message": msg, "data": map[string]any{"status": p.Fault.Status}}})
			return agentAction{reply: append(reply, '\n'), then: then}
		}
		s.mu.Lock()
		s.inflight[id] = &flight{p: p}
		s.mu.Unlock()
		return agentAction{delay: p.Fault.Delay, then: then}
	case m.Method == "notifications/cancelled":
		var params struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = json.Unmarshal(m.Params, &params)
		s.mu.Lock()
		f := s.inflight[string(bytes.TrimSpace(params.RequestID))]
		s.mu.Unlock()
		if f != nil && f.p != nil {
			s.rec.Cancel(f.p)
		}
	}
	return agentAction{}
}

// key reads the idempotency key from the arguments or the _meta of a tools/call.
func (s *mcpSession) key(args json.RawMessage, meta map[string]any) string {
	k := s.rec.opts.Key
	var v any
	switch {
	case k.Meta != "":
		v = meta[k.Meta]
	case k.Arg != "":
		var m map[string]any
		_ = json.Unmarshal(args, &m)
		v = m[k.Arg]
	}
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// fromServer inspects a message the server sent and reports whether the agent gets it, and
// what to send the server next (the next page of the proxy's own tools/list).
func (s *mcpSession) fromServer(raw []byte) (deliver bool, then []byte) {
	m, ok := parseMsg(raw)
	if !ok || m.Method != "" {
		return true, nil
	}
	id := m.idKey()
	s.mu.Lock()
	f := s.inflight[id]
	delete(s.inflight, id)
	s.mu.Unlock()
	switch {
	case f == nil:
		return true, nil
	case f.list:
		tools, next := readOnlyTools(m.Result)
		s.rec.SeeTools(tools)
		if f.own && next != "" {
			then = s.ownList(next)
		}
		return !f.own, then
	}
	s.rec.Finish(f.p, classify(m))
	return f.p.Fault.Kind != LoseResponse && f.p.Fault.Kind != Timeout, nil
}

// readOnlyTools reads readOnlyHint per tool from a tools/list result, and the next page's cursor.
func readOnlyTools(result json.RawMessage) (map[string]bool, string) {
	var r struct {
		NextCursor string `json:"nextCursor"`
		Tools      []struct {
			Name        string `json:"name"`
			Annotations *struct {
				ReadOnlyHint bool `json:"readOnlyHint"`
			} `json:"annotations"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(result, &r)
	out := make(map[string]bool, len(r.Tools))
	for _, t := range r.Tools {
		out[t.Name] = t.Annotations != nil && t.Annotations.ReadOnlyHint
	}
	return out, r.NextCursor
}

// classify turns a tools/call answer into an outcome as endpoint.MCP does: a JSON-RPC error or
// isError is fail, else ok; the result is structuredContent, else the text as JSON when it is
// JSON, else the whole result.
func classify(m rpcMsg) Answer {
	if m.Error != nil {
		return Answer{Outcome: endpoint.Fail, Error: fmt.Sprintf("json-rpc error %d: %s", m.Error.Code, m.Error.Message)}
	}
	var r struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Meta map[string]any `json:"_meta"`
	}
	_ = json.Unmarshal(m.Result, &r)
	a := Answer{Outcome: endpoint.OK, Result: m.Result}
	var text strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
	}
	switch {
	case len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null":
		a.Result = r.StructuredContent
	case json.Valid([]byte(text.String())):
		a.Result = json.RawMessage(text.String())
	}
	for _, k := range []string{"idempotentReplayed", "replayed", "io.idemtest/replayed"} {
		if b, ok := r.Meta[k].(bool); ok && b {
			a.Replayed = true
		}
	}
	if r.IsError {
		a.Outcome = endpoint.Fail
		a.Error = "tool error: " + strings.TrimSpace(text.String())
	}
	return a
}
