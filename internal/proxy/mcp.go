package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/endpoint/mcp"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/proxy/fault"
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
	id   json.RawMessage
	// held is a call a timeout fault keeps from the server until the agent gives up.
	held []byte
}

// mcpSession follows one MCP conversation between an agent and a server: it records tools/call
// requests and their answers, learns readOnlyHint from tools/list answers, and applies faults.
type mcpSession struct {
	rec *Recorder

	mu       sync.Mutex
	inflight map[string]*flight
	// watched are the calls whose answer a fault keeps from the agent and that the agent has
	// not given up on yet (for Options.Hold).
	watched map[string]*flight
	listed  int    // tools/list requests of the proxy's own
	listGen uint64 // orders the reports of syncListing
	seen    bool   // a tools/list request went to the server
	// protoMeta are the protocol's own _meta entries of the agent's requests (protocol
	// version, client info: newer MCP revisions send them on every request), copied to the
	// proxy's own requests.
	protoMeta map[string]any
	// hsID and hsMethod are the agent's latest handshake request (initialize, or server/discover
	// in newer MCP revisions, whose clients fall back to initialize on an error); hsErr is the
	// server's error answer to it, hsOK is set once a handshake request got a result.
	hsID, hsMethod, hsErr string
	hsOK                  bool
	// listsDone are closed once no tools/list of the proxy's own awaits its answer (ownListed).
	listsDone []chan struct{}
	// contacted is set by the agent's first message; going once the agent sent a message
	// other than a handshake request after the server answered one (notifications/initialized,
	// a request), or without any handshake: its session got under way.
	contacted, going bool
	// undelivered says why the server's answer to the agent's handshake could not be written
	// to the agent, "" when it was (or never came).
	undelivered string
}

// Stages at which an agent's session that never got going stopped (SessionError.Stage); the
// ids are stable (JSON).
const (
	// StageNoInitialize: the agent sent messages but no initialize request.
	StageNoInitialize = "no-initialize"
	// StageUndelivered: the proxy could not deliver the server's answer to initialize.
	StageUndelivered = "answer-undelivered"
	// StageNoInitialized: the agent was answered initialize but sent neither
	// notifications/initialized nor any request after it.
	StageNoInitialized = "no-initialized"
)

// SessionError is an agent session that never got going: the agent connected, but its MCP
// handshake did not complete. Nothing it did can be judged, and a session that tested nothing
// must not pass.
type SessionError struct {
	// Stage is where the session stopped: StageNoInitialize, StageUndelivered or
	// StageNoInitialized.
	Stage string
	What  string
}

// Error says where the session stopped.
func (e *SessionError) Error() string {
	return "the agent's MCP session never got going: " + e.What
}

// sessionError says where the agent's session stopped when the agent connected but its
// handshake did not complete; nil when it got going, when the agent never sent a word, or when
// the server is to blame (initProblem).
func (s *mcpSession) sessionError() *SessionError {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.contacted || s.going:
		return nil
	case s.undelivered != "":
		return &SessionError{Stage: StageUndelivered, What: s.undelivered}
	case s.hsMethod == "":
		return &SessionError{Stage: StageNoInitialize, What: "the agent sent no initialize request (nor any other request)"}
	case !s.hsOK:
		return nil
	case s.hsMethod != "initialize":
		// server/discover (newer MCP revisions) opens no session: its answer, delivered,
		// is the whole handshake, and nothing need follow it.
		return nil
	}
	return &SessionError{Stage: StageNoInitialized, What: fmt.Sprintf(
		"the tool server answered the agent's %s request (id %s), but the agent sent no notifications/initialized and no request after it: the answer did not reach the agent, or the agent gave up on it",
		s.hsMethod, s.hsID)}
}

// undeliverable notes that a message from the server could not be written to the agent: when
// it is the answer to the agent's handshake, the session cannot get going.
func (s *mcpSession) undeliverable(raw []byte, err error) {
	m, ok := parseMsg(raw)
	if !ok || m.Method != "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id := m.idKey(); s.undelivered == "" && id != "" && id == s.hsID {
		s.undelivered = fmt.Sprintf("the proxy could not deliver the tool server's answer to the agent's %s request (id %s): %v", s.hsMethod, id, err)
	}
}

// handshakes are the requests an MCP client opens a session with.
var handshakes = map[string]bool{"initialize": true, "server/discover": true}

// initProblem says what went wrong with the agent's handshake, "" when the server answered it
// or the agent never sent one (an agent that disconnects without a word is no fault of the
// server's).
func (s *mcpSession) initProblem() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.hsMethod == "" || s.hsOK:
		return ""
	case s.hsErr == "":
		return "never answered the agent's " + s.hsMethod + " request"
	}
	return "refused the agent's " + s.hsMethod + " request: " + s.hsErr
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

// ownListed returns a channel closed once no tools/list request of the proxy's own awaits its
// answer: what the verdict knows of read-only tools comes from those answers, so a session ends
// only after them (or after a bound the caller sets).
func (s *mcpSession) ownListed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	s.listsDone = append(s.listsDone, ch)
	s.settleLists()
	return ch
}

// settleLists closes the channels of ownListed when no list of the proxy's own is in flight;
// s.mu is held.
func (s *mcpSession) settleLists() {
	for _, f := range s.inflight {
		if f.own && f.list {
			return
		}
	}
	for _, ch := range s.listsDone {
		close(ch)
	}
	s.listsDone = nil
}

// syncListing tells the recorder how many tools/list requests are in flight: the calls that
// complete meanwhile wait for their answers before they are traced.
func (s *mcpSession) syncListing() {
	s.mu.Lock()
	n := 0
	for _, f := range s.inflight {
		if f.list {
			n++
		}
	}
	s.listGen++
	gen := s.listGen
	s.mu.Unlock()
	s.rec.SetListing(gen, n)
}

func newMCPSession(rec *Recorder) *mcpSession {
	return &mcpSession{rec: rec, inflight: map[string]*flight{}, watched: map[string]*flight{}}
}

// agentAction says what to do with a message from the agent.
type agentAction struct {
	// reply, when set, answers the agent instead of forwarding.
	reply []byte
	// delay holds the message back before forwarding.
	delay time.Duration
	// then is sent to the server after the message.
	then []byte
	// skip keeps the message from the server: a call a timeout fault holds, or the agent's
	// cancellation of such a call (the server is to execute it late, not to cancel it).
	skip bool
	// held is the id of a call a timeout fault holds (skip is set too).
	held string
	// watch is the id of a call whose answer a fault keeps from the agent: after
	// Options.Hold, the transport calls expire with it.
	watch string
	// forward, when set, is the message to send in place of the agent's: a tools/call given
	// a traceparent in params._meta.
	forward []byte
}

// fromAgent inspects a message the agent sent.
func (s *mcpSession) fromAgent(raw []byte) agentAction {
	m, ok := parseMsg(raw)
	s.mu.Lock()
	s.contacted = true
	if ok && m.Method != "" && !handshakes[m.Method] && (s.hsOK || s.hsMethod == "") {
		s.going = true
	}
	s.mu.Unlock()
	if !ok || m.Method == "" {
		return agentAction{}
	}
	id := m.idKey()
	switch {
	case handshakes[m.Method] && id != "":
		s.mu.Lock()
		s.hsID, s.hsMethod, s.hsErr = id, m.Method, ""
		s.mu.Unlock()
	case m.Method == "tools/list" && id != "":
		s.mu.Lock()
		s.inflight[id] = &flight{list: true}
		s.seen = true
		s.mu.Unlock()
		s.syncListing()
	case m.Method == "tools/call" && id != "":
		var params struct {
			Name      string                     `json:"name"`
			Arguments json.RawMessage            `json:"arguments"`
			Meta      map[string]json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(m.Params, &params)
		p := s.rec.Begin(params.Name, params.Arguments, s.key(params.Arguments, params.Meta))
		var tp string
		_ = json.Unmarshal(params.Meta[endpoint.TraceParentHeader], &tp)
		var forward []byte
		if tp == "" {
			// The server's spans join a trace the proxy starts for the call; an agent's own
			// traceparent is kept.
			tp = endpoint.NewTraceParent()
			if b, ok := withTraceParent(raw, tp); ok {
				if bytes.HasSuffix(raw, []byte("\n")) {
					b = append(b, '\n') // stdio frames messages by line
				}
				raw, forward = b, b
			} else {
				tp = ""
			}
		}
		s.rec.SetTraceID(p, endpoint.TraceIDOf(tp))
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
			s.syncListing()
		}
		switch p.Fault.Kind {
		case fault.Error:
			msg := fmt.Sprintf("idemtest injected fault: %s (status %d, the call was not forwarded)", p.Fault, p.Fault.Status)
			s.rec.Finish(p, Answer{Outcome: outcome.Fail, Status: p.Fault.Status, Error: "json-rpc error -32000: " + msg})
			reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID,
				"error": map[string]any{"code": -32000, "message": msg, "data": map[string]any{"status": p.Fault.Status}}})
			return agentAction{reply: append(reply, '\n'), then: then}
		}
		act := s.track(id, m.ID, raw, p, then)
		act.forward = forward
		return act
	case m.Method == "notifications/cancelled":
		var params struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = json.Unmarshal(m.Params, &params)
		cid := string(bytes.TrimSpace(params.RequestID))
		s.mu.Lock()
		f := s.inflight[cid]
		delete(s.watched, cid)
		s.mu.Unlock()
		if f != nil && f.p != nil {
			s.rec.Cancel(f.p)
			if f.p.Fault.Kind == fault.Timeout {
				return agentAction{skip: true, then: s.release(cid)}
			}
		}
	}
	return agentAction{}
}

// withTraceParent is a JSON-RPC request with traceparent set in params._meta; ok is false when
// the message's params are no object.
func withTraceParent(raw []byte, tp string) ([]byte, bool) {
	var msg map[string]json.RawMessage
	if json.Unmarshal(raw, &msg) != nil {
		return nil, false
	}
	params := map[string]json.RawMessage{}
	if p, ok := msg["params"]; ok && json.Unmarshal(p, &params) != nil {
		return nil, false
	}
	meta := map[string]json.RawMessage{}
	if m, ok := params["_meta"]; ok && string(bytes.TrimSpace(m)) != "null" && json.Unmarshal(m, &meta) != nil {
		return nil, false
	}
	meta[endpoint.TraceParentHeader], _ = json.Marshal(tp)
	params["_meta"], _ = json.Marshal(meta)
	msg["params"], _ = json.Marshal(params)
	b, err := json.Marshal(msg)
	return b, err == nil
}

// track notes a forwarded (or, for a timeout fault, held) tools/call.
func (s *mcpSession) track(id string, rawID json.RawMessage, raw []byte, p *Pending, then []byte) agentAction {
	f := &flight{p: p, id: rawID}
	act := agentAction{delay: p.Fault.Delay, then: then}
	if p.Fault.Kind == fault.Timeout {
		f.held, act.skip, act.held = bytes.Clone(raw), true, id
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight[id] = f
	if (p.Fault.Kind == fault.Timeout || p.Fault.Kind == fault.LoseResponse) && s.rec.opts.Hold > 0 {
		s.watched[id] = f
		act.watch = id
	}
	return act
}

// release returns the call a timeout fault held, once, for the server to execute late; nil
// when there is none (any more).
func (s *mcpSession) release(id string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.inflight[id]
	if f == nil || f.held == nil {
		return nil
	}
	b := f.held
	f.held = nil
	return b
}

// releaseAll returns every call still held, when the agent has gone: it gave up on them all.
func (s *mcpSession) releaseAll() [][]byte {
	s.mu.Lock()
	ids := make([]string, 0, len(s.inflight))
	for id, f := range s.inflight {
		if f.held != nil {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	sort.Strings(ids)
	var out [][]byte
	for _, id := range ids {
		if b := s.release(id); b != nil {
			out = append(out, b)
		}
	}
	return out
}

// expire ends the wait of a watched call that Options.Hold allowed: reply is the "request timed
// out" error the agent gets, release the held call to send the server (nil for lose-response).
// Both are nil when the agent gave up first.
func (s *mcpSession) expire(id string) (reply, release []byte) {
	s.mu.Lock()
	f := s.watched[id]
	delete(s.watched, id)
	s.mu.Unlock()
	if f == nil {
		return nil, nil
	}
	msg := fmt.Sprintf("Request timed out (idemtest proxy: fault %s kept the answer for %s)", f.p.Fault, s.rec.opts.Hold)
	reply, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": f.id, "error": map[string]any{"code": -32001, "message": msg}})
	return append(reply, '\n'), s.release(id)
}

// key reads the idempotency key from the arguments or the _meta of a tools/call: a string
// key as its text, any other value as its JSON text as the agent spelled it (a number past
// float64's precision stays the key it was).
func (s *mcpSession) key(args json.RawMessage, meta map[string]json.RawMessage) string {
	k := s.rec.opts.Key
	var v json.RawMessage
	switch {
	case k.Meta != "":
		v = meta[k.Meta]
	case k.Arg != "":
		var m map[string]json.RawMessage
		_ = json.Unmarshal(args, &m)
		v = m[k.Arg]
	}
	v = bytes.TrimSpace(v)
	var str string
	switch {
	case len(v) == 0 || string(v) == "null":
		return ""
	case json.Unmarshal(v, &str) == nil:
		return str
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
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
	switch {
	case id == "" || f != nil:
	case m.Error == nil:
		s.hsOK = true // an answer to initialize, or to any other request: the server is up
	case id == s.hsID:
		s.hsErr = fmt.Sprintf("json-rpc error %d: %s", m.Error.Code, m.Error.Message)
	}
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
		s.mu.Lock()
		s.settleLists()
		s.mu.Unlock()
		s.syncListing()
		return !f.own, then
	}
	s.rec.Finish(f.p, classify(m))
	return f.p.Fault.Kind != fault.LoseResponse && f.p.Fault.Kind != fault.Timeout, nil
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

// classify turns a tools/call answer into an outcome as endpoint/mcp does: a JSON-RPC error or
// isError is fail, else ok; the result is structuredContent, else the text as JSON when it is
// JSON, else the whole result.
func classify(m rpcMsg) Answer {
	if m.Error != nil {
		return Answer{Outcome: outcome.Fail, Error: fmt.Sprintf("json-rpc error %d: %s", m.Error.Code, m.Error.Message)}
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
	a := Answer{Outcome: outcome.OK, Result: m.Result}
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
	a.Replayed = mcp.Replayed(r.Meta)
	if r.IsError {
		a.Outcome = outcome.Fail
		a.Error = "tool error: " + strings.TrimSpace(text.String())
	}
	refused(&a)
	return a
}

// refused reads an ok answer as the runner and the verdict do: an error-shaped success
// ({"status":"error"}, {"success":false}, {"ok":false}, a lone {"error":…}) is a refusal, on
// either transport, so the agent's retry after it is judged as a retry after a failure.
func refused(a *Answer) {
	if a.Outcome != outcome.OK || len(a.Result) == 0 {
		return
	}
	var v any
	if json.Unmarshal(a.Result, &v) != nil {
		return
	}
	if msg, ok := (endpoint.Refusals{}).Refused(v); ok {
		a.Outcome, a.Error = outcome.Fail, msg
	}
}

// Codes of the JSON-RPC errors the proxy answers for a message it dropped at its line cap.
const (
	// tooLargeRequest answers an agent's request the proxy did not forward.
	tooLargeRequest = -32600
	// tooLargeAnswer replaces a server's answer the proxy did not deliver.
	tooLargeAnswer = -32603
)

// rpcError is a JSON-RPC error answer for id, as a line.
func rpcError(id json.RawMessage, code int, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	return append(b, '\n')
}

// agentDropped handles a message from the agent that the proxy dropped at its cap of max
// bytes: a request with an id gets an error answer (reply), so that the agent does not wait
// for ever; note says what happened, for the verdict.
func (s *mcpSession) agentDropped(d dropped, max int) (reply []byte, note string) {
	note = fmt.Sprintf("dropped a message of %s from the agent: over the %s line cap, not forwarded", sizeText(d.size), sizeText(int64(max)))
	if d.request && d.id != nil {
		note += fmt.Sprintf("; request id %s answered with an error", d.id)
		reply = rpcError(d.id, tooLargeRequest, fmt.Sprintf("idemtest proxy: request of %s is over the %s line cap; not forwarded to the tool server", sizeText(d.size), sizeText(int64(max))))
	}
	return reply, note
}

// serverDropped handles a message from the server that the proxy dropped at its cap of max
// bytes. An answer to an agent's call is recorded as info (the server may have executed it; the
// agent cannot know) and the agent gets an error in its place (reply), unless a fault keeps the
// answer from the agent anyway; an answer to the proxy's own request is not the agent's.
func (s *mcpSession) serverDropped(d dropped, max int) (reply []byte, note string) {
	note = fmt.Sprintf("dropped a message of %s from the tool server: over the %s line cap, not delivered", sizeText(d.size), sizeText(int64(max)))
	if d.request || d.id == nil {
		return nil, note
	}
	msg := fmt.Sprintf("idemtest proxy: the tool server's answer of %s is over the %s line cap; dropped", sizeText(d.size), sizeText(int64(max)))
	id := string(d.id)
	s.mu.Lock()
	f := s.inflight[id]
	delete(s.inflight, id)
	if f == nil && id == s.hsID {
		s.hsErr = msg
	}
	s.mu.Unlock()
	if f != nil && f.list {
		s.syncListing()
	}
	note += "; answer to request id " + id
	switch {
	case f != nil && f.own:
		return nil, note
	case f != nil && f.p != nil:
		s.rec.Finish(f.p, Answer{Outcome: outcome.Info, Error: msg})
		note += fmt.Sprintf(" (%s call #%d, recorded as info)", f.p.Tool, f.p.Seq)
		if k := f.p.Fault.Kind; k == fault.LoseResponse || k == fault.Timeout {
			return nil, note
		}
	}
	return rpcError(d.id, tooLargeAnswer, msg), note
}
