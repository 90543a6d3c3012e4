package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/proxy"
	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/trace"
)

var (
	badOnce sync.Once
	badBin  string
	badErr  error
)

// badServer builds the red-team tool server (testdata/redteam/badserver) once per test binary.
func badServer(t *testing.T) string {
	t.Helper()
	badOnce.Do(func() {
		dir, err := os.MkdirTemp("", "idemtest-proxy-badserver")
		if err != nil {
			badErr = err
			return
		}
		badBin = filepath.Join(dir, "badserver")
		out, err := exec.Command("go", "build", "-o", badBin, "github.com/idemtest/idemtest/testdata/redteam/badserver").CombinedOutput()
		if err != nil {
			badErr = fmt.Errorf("build badserver: %w\n%s", err, out)
		}
	})
	if badErr != nil {
		t.Fatal(badErr)
	}
	return badBin
}

// rpcAgent is an agent at the raw JSON-RPC level: it writes lines to the proxy's stdin and
// collects the proxy's answers by id.
type rpcAgent struct {
	in      *io.PipeWriter
	mu      sync.Mutex
	answers map[string]json.RawMessage
	got     chan struct{}
	partial []byte
}

func newRPCAgent() (*rpcAgent, *io.PipeReader) {
	pr, pw := io.Pipe()
	return &rpcAgent{in: pw, answers: map[string]json.RawMessage{}, got: make(chan struct{}, 1)}, pr
}

// Write receives the proxy's output to the agent.
func (a *rpcAgent) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.partial = append(a.partial, p...)
	for {
		i := bytes.IndexByte(a.partial, '\n')
		if i < 0 {
			break
		}
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		line := a.partial[:i]
		if json.Unmarshal(line, &m) == nil && len(m.ID) > 0 {
			a.answers[string(m.ID)] = json.RawMessage(bytes.Clone(line))
		}
		a.partial = a.partial[i+1:]
	}
	select {
	case a.got <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (a *rpcAgent) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(a.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// answer waits for the answer to id; it fails the test when none comes (within a minute, so
// that a proxy that never answers does not hang the test).
func (a *rpcAgent) answer(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		a.mu.Lock()
		raw, ok := a.answers[id]
		a.mu.Unlock()
		if ok {
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("answer %s: %v", id, err)
			}
			return m
		}
		select {
		case <-a.got:
		case <-deadline:
			t.Fatalf("the agent got no answer to request %s", id)
		}
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-agent","version":"1"}}}`

// errorCode is the JSON-RPC error code of an answer, 0 when it is no error.
func errorCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}

// runStdio runs the stdio proxy in this process in front of server, for the agent; wait ends
// the agent's stream and returns the calls traced and the proxy's notes.
func runStdio(t *testing.T, opts proxy.Options, server ...string) (agent *rpcAgent, wait func() ([]trace.Call, []string)) {
	t.Helper()
	agent, agentIn := newRPCAgent()
	var buf bytes.Buffer
	tw, err := trace.NewWriter(&buf, trace.Header{Transport: trace.MCPStdio})
	if err != nil {
		t.Fatal(err)
	}
	opts.Trace = tw
	rec := proxy.NewRecorder(opts)
	done := make(chan error, 1)
	go func() {
		done <- proxy.RunStdio(context.Background(), rec, agentIn, agent, proxy.StdioConfig{Command: server, Stderr: io.Discard})
	}()
	return agent, func() ([]trace.Call, []string) {
		agent.in.Close()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v", err)
		}
		if _, err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		_, calls, err := trace.Read(context.Background(), &buf)
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(calls, func(i, j int) bool { return calls[i].Seq < calls[j].Seq })
		return calls, rec.Notes()
	}
}

// endless writes n bytes of filler to w without allocating them.
func endless(w io.Writer, n int64) error {
	buf := bytes.Repeat([]byte("x"), 1<<20)
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// An agent that sends 300 MiB without a newline costs the proxy at most one line's cap
// (64 MiB, measured as all the bytes the process allocated meanwhile), gets an error answer
// for its request, and the session goes on.
func TestStdioProxyBoundsAnAgentsLine(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 300 MiB through the proxy")
	}
	agent, wait := runStdio(t, proxy.Options{Key: scenario.KeySpec{Arg: "idempotencyKey"}}, refundServer(t), "--stdio")
	agent.send(t, initialize)
	agent.answer(t, "1")
	agent.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := io.WriteString(agent.in, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"issue_refund","arguments":{"accountId":"acct_1","note":"`); err != nil {
		t.Fatal(err)
	}
	if err := endless(agent.in, 300<<20); err != nil {
		t.Fatal(err)
	}
	agent.send(t, `"}},"id":7}`)
	agent.send(t, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"list_refunds","arguments":{"accountId":"acct_1"}}}`)
	refused, listed := agent.answer(t, "7"), agent.answer(t, "8")
	runtime.ReadMemStats(&after)
	calls, notes := wait()

	t.Logf("the proxy allocated %d MiB while a 300 MiB line went by", (after.TotalAlloc-before.TotalAlloc)>>20)
	if got := after.TotalAlloc - before.TotalAlloc; got > 200<<20 {
		t.Errorf("the proxy allocated %d MiB for a 300 MiB line; want at most about two 64 MiB lines", got>>20)
	}
	if errorCode(refused) != -32600 || !strings.Contains(fmt.Sprint(refused["error"]), "line cap") {
		t.Errorf("the oversized request was answered %v, want a -32600 error naming the line cap", refused)
	}
	if _, ok := listed["result"]; !ok {
		t.Errorf("the next request was answered %v, want a result", listed)
	}
	if len(calls) != 1 || calls[0].Tool != "list_refunds" {
		t.Errorf("recorded %+v, want only list_refunds (the oversized call never reached the server)", calls)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "from the agent") || !strings.Contains(notes[0], "request id 7") {
		t.Errorf("notes %q, want one about the agent's request 7", notes)
	}
}

// A server answer over the cap is dropped: the agent gets an error in its place, the call is
// recorded with an unknown outcome (the server executed it), and the session goes on.
func TestStdioProxyDropsAnOversizedAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("the server answers 80 MB")
	}
	// giant: the refundId is 40 MB, and the answer carries it twice (structured and text).
	agent, wait := runStdio(t, proxy.Options{Key: scenario.KeySpec{Arg: "idempotencyKey"}}, badServer(t), "--stdio", "--mode", "giant", "--giant-bytes", "40000000")
	agent.send(t, initialize)
	agent.answer(t, "1")
	agent.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	agent.send(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"issue_refund","arguments":{"accountId":"acct_1","amount":5,"idempotencyKey":"k-1"}}}`)
	dropped := agent.answer(t, "5")
	agent.send(t, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"list_refunds","arguments":{}}}`)
	listed := agent.answer(t, "6")
	calls, notes := wait()

	if errorCode(dropped) != -32603 || !strings.Contains(fmt.Sprint(dropped["error"]), "line cap") {
		t.Errorf("the oversized answer was replaced by %v, want a -32603 error naming the line cap", dropped)
	}
	if _, ok := listed["result"]; !ok {
		t.Errorf("the next request was answered %v, want a result", listed)
	}
	if len(calls) != 2 || calls[0].Outcome != "info" || !strings.Contains(calls[0].Error, "line cap") {
		t.Fatalf("recorded %+v, want issue_refund as info (its answer dropped at the line cap) then list_refunds", calls)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "from the tool server") || !strings.Contains(notes[0], "issue_refund call #1") {
		t.Errorf("notes %q, want one about issue_refund's answer", notes)
	}
}

// runPlain runs the plain HTTP proxy in this process in front of upstream, recording the trace
// into rec; stop ends it and returns the calls.
func runPlain(t *testing.T, upstream string, opts proxy.Options, rec io.Writer) (addr string, stop func() *agentverdict.Calls) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	sess := &proxy.Session{HTTP: proxy.HTTPConfig{Listen: "127.0.0.1:0", Upstream: upstream, Plain: true, Ready: pw}, Options: opts, Record: rec}
	type result struct {
		calls *agentverdict.Calls
		err   error
	}
	done := make(chan result, 1)
	go func() {
		calls, _, err := sess.Run(ctx)
		pw.Close()
		done <- result{calls, err}
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	m := listening.FindStringSubmatch(line)
	if m == nil {
		cancel()
		t.Fatalf("the proxy did not listen: %q %v", line, err)
	}
	return m[1], func() *agentverdict.Calls {
		cancel()
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.calls
	}
}

// A server that answers 70 MiB (over the proxy's 64 MiB body cap) gets its answer through to
// the agent whole, and leaves a trace that trace.Read reads back: the result left out, marked.
func TestPlainProxyTraceOfAHugeAnswerIsReadable(t *testing.T) {
	if testing.Short() {
		t.Skip("the server answers 70 MiB")
	}
	_, serverURL := startListening(t, badServer(t), nil, "--mode", "giant", "--giant-bytes", fmt.Sprint(70<<20))
	var rec bytes.Buffer
	addr, stop := runPlain(t, serverURL, proxy.Options{Key: scenario.KeySpec{Header: "Idempotency-Key"}}, &rec)
	req, _ := http.NewRequest(http.MethodPost, addr+"/tools/issue_refund", strings.NewReader(`{"accountId":"acct_1","amount":5}`))
	req.Header.Set("Idempotency-Key", "k-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		RefundID string `json:"refundId"`
	}
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if err != nil || len(answer.RefundID) != 70<<20 {
		t.Errorf("the agent got a refundId of %d bytes (%v), want the server's 70 MiB", len(answer.RefundID), err)
	}
	stop()

	_, calls, err := trace.Read(context.Background(), &rec)
	if err != nil {
		t.Fatalf("read the trace back: %v", err)
	}
	if len(calls) != 1 || !calls[0].ResultTruncated || len(calls[0].Result) != 0 || calls[0].Status != 200 || calls[0].Outcome != "ok" {
		t.Errorf("traced %+v, want the call ok with its result left out and marked", calls)
	}
}

// The values of credential headers never reach the trace or the verdict, also when the
// server echoes them in its answer.
func TestPlainProxyHidesEchoedCredentials(t *testing.T) {
	secrets := map[string]string{
		"Authorization": "Bearer tok-4f9a1c77e2",
		"Cookie":        "session=ck-88d0b1e5; theme=dark-mode",
		"X-Api-Key":     "ak-0d3e66b1f4",
		"X-Tenant-Auth": "tn-51c9e0a2",
		// Named like a secret: hidden as run hides it, without --redact-header.
		"X-Auth-Token": "xat-6e2d90c4b1",
	}
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen := map[string]string{}
		for name := range secrets {
			seen[name] = r.Header.Get(name)
		}
		w.Header().Set("Set-Cookie", "sid=sc-7b2f90aa; Path=/; HttpOnly")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"echo": seen, "note": "sid was sc-7b2f90aa, token tok-4f9a1c77e2"})
	}))
	defer echo.Close()
	var rec bytes.Buffer
	addr, stop := runPlain(t, echo.URL, proxy.Options{Key: scenario.KeySpec{Header: "Idempotency-Key"}, RedactHeaders: []string{"X-Tenant-Auth"}}, &rec)
	req, _ := http.NewRequest(http.MethodPost, addr+"/tools/issue_refund", strings.NewReader(`{"accountId":"acct_1","amount":5}`))
	for name, v := range secrets {
		req.Header.Set(name, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte("tok-4f9a1c77e2")) {
		t.Errorf("the agent's own answer was altered: %s", body)
	}
	calls := stop()

	_, traced, err := trace.Read(context.Background(), bytes.NewReader(rec.Bytes()))
	if err != nil || len(traced) != 1 {
		t.Fatalf("read the trace back: %d calls, %v", len(traced), err)
	}
	var result struct {
		Echo map[string]string `json:"echo"`
	}
	if err := json.Unmarshal(traced[0].Result, &result); err != nil || result.Echo["Authorization"] != "***" || result.Echo["X-Auth-Token"] != "***" {
		t.Errorf("the traced result %s (%v) does not show the echoed Authorization and X-Auth-Token as ***", traced[0].Result, err)
	}
	var kept []agentverdict.Call
	for i := range calls.Len() {
		kept = append(kept, calls.At(i))
	}
	returned, err := json.Marshal(kept)
	if err != nil || len(kept) != 1 {
		t.Fatalf("the verdict kept %d calls (%v), want 1", len(kept), err)
	}
	for _, leaked := range []string{"tok-4f9a1c77e2", "ck-88d0b1e5", "dark-mode", "ak-0d3e66b1f4", "tn-51c9e0a2", "sc-7b2f90aa", "xat-6e2d90c4b1"} {
		if bytes.Contains(rec.Bytes(), []byte(leaked)) {
			t.Errorf("the trace holds %q", leaked)
		}
		if bytes.Contains(returned, []byte(leaked)) {
			t.Errorf("the calls the verdict judges hold %q", leaked)
		}
	}
}

// The header that carries the key is no credential, even named like one: the trace keeps the
// key (a sweep replays by it), while another header named like a secret is hidden.
func TestPlainProxyKeepsAKeyHeaderNamedLikeASecret(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"key": r.Header.Get("X-Idempotency-Token"), "session": r.Header.Get("X-Session-Token")})
	}))
	defer echo.Close()
	var rec bytes.Buffer
	addr, stop := runPlain(t, echo.URL, proxy.Options{Key: scenario.KeySpec{Header: "X-Idempotency-Token"}}, &rec)
	req, _ := http.NewRequest(http.MethodPost, addr+"/tools/issue_refund", strings.NewReader(`{"accountId":"acct_1","amount":5}`))
	req.Header.Set("X-Idempotency-Token", "key-5a1f30c2")
	req.Header.Set("X-Session-Token", "st-0c81d2e94a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	stop()

	_, traced, err := trace.Read(context.Background(), bytes.NewReader(rec.Bytes()))
	if err != nil || len(traced) != 1 {
		t.Fatalf("read the trace back: %d calls, %v", len(traced), err)
	}
	if traced[0].Key != "key-5a1f30c2" || !bytes.Contains(traced[0].Result, []byte(`"key":"key-5a1f30c2"`)) {
		t.Errorf("traced key %q, result %s: want the key key-5a1f30c2 in both", traced[0].Key, traced[0].Result)
	}
	if bytes.Contains(rec.Bytes(), []byte("st-0c81d2e94a")) {
		t.Errorf("the trace holds the X-Session-Token value: %s", rec.Bytes())
	}
}
