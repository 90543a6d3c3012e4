package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/cmd"
	"github.com/idemtest/idemtest/internal/testenv"
	"github.com/idemtest/idemtest/internal/trace"
)

// The test binary doubles as idemtest, so that a real MCP client can start
// "idemtest proxy -- refundserver --stdio" as its server command.
func TestMain(m *testing.M) {
	if os.Getenv("IDEMTEST_PROXY_TEST_MAIN") == "1" {
		os.Exit(int(cmd.Main()))
	}
	os.Exit(m.Run())
}

var (
	buildOnce sync.Once
	serverBin string
	buildErr  error
	binDir    string
)

// refundServer builds the reference server once per test binary.
func refundServer(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "idemtest-proxy-test"); buildErr != nil {
			return
		}
		serverBin = filepath.Join(binDir, "refundserver")
		out, err := exec.Command("go", "build", "-o", serverBin, "github.com/idemtest/idemtest/examples/refundserver").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build refundserver: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return serverBin
}

// proxied starts "idemtest proxy ARGS -- refundserver --stdio" through the Go SDK's
// CommandTransport and returns the client session and the proxy's command (for its exit
// status and stderr once the session is closed).
func proxied(t *testing.T, args ...string) (*mcp.ClientSession, *exec.Cmd, *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, c, stderr, err := connectProxy(ctx, t, args, refundServer(t), "--stdio")
	if err != nil {
		t.Fatalf("connect through the proxy: %v\n%s", err, stderr)
	}
	return cs, c, stderr
}

// connectProxy starts "idemtest proxy ARGS -- SERVER..." as an agent's MCP server, through the
// Go SDK's CommandTransport, and connects to it. When the connection fails, the proxy has
// exited by the time connectProxy returns.
func connectProxy(ctx context.Context, t *testing.T, args []string, server ...string) (*mcp.ClientSession, *exec.Cmd, *bytes.Buffer, error) {
	t.Helper()
	return connectProxyVia(ctx, t, nil, args, server...)
}

// connectProxyVia is connectProxy with the agent's transport wrapped by wrap (nil: as it is).
func connectProxyVia(ctx context.Context, t *testing.T, wrap func(mcp.Transport) mcp.Transport, args []string, server ...string) (*mcp.ClientSession, *exec.Cmd, *bytes.Buffer, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append(append([]string{"proxy"}, args...), "--"), server...)
	c := exec.Command(self, argv...)
	c.Env = append(os.Environ(), "IDEMTEST_PROXY_TEST_MAIN=1")
	stderr := &bytes.Buffer{}
	c.Stderr = &lockedBuffer{b: stderr}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	var tr mcp.Transport = &mcp.CommandTransport{Command: c, TerminateDuration: 10 * time.Second}
	if wrap != nil {
		tr = wrap(tr)
	}
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil && c.ProcessState == nil && c.Process != nil {
		_ = c.Wait()
	}
	return cs, c, stderr, err
}

// sentTransport closes sent once the agent has written a tools/call of tool to the proxy's
// stdin: every message the agent writes after that, the proxy reads after the call.
type sentTransport struct {
	mcp.Transport
	tool string
	sent chan struct{}
}

func (s *sentTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := s.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &sentConn{Connection: c, t: s}, nil
}

type sentConn struct {
	mcp.Connection
	t    *sentTransport
	once sync.Once
}

func (c *sentConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.Method == "tools/call" {
		var p struct{ Name string }
		if json.Unmarshal(req.Params, &p) == nil && p.Name == c.t.tool {
			c.once.Do(func() { close(c.t.sent) })
		}
	}
	return err
}

type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// agent is the retry loop of an agent framework: each logical call gets a key; a failed
// attempt (an error or no answer within attempt) is retried, with the same key when reuseKey
// is set and with a freshly minted one otherwise.
type agent struct {
	cs       *mcp.ClientSession
	session  string
	attempts int
	attempt  time.Duration
	reuseKey bool
	noKey    bool
	// regenerated, when set, is the JSON arguments (without the key) of attempts after the
	// first, as an agent that rebuilds its call spells them; %s is the account.
	regenerated string
	n           int
}

func (a *agent) call(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	a.n++
	key := fmt.Sprintf("%s-%d", a.session, a.n)
	var lastErr error
	waitUntil := time.Now().Add(time.Minute)
	for i := 1; i <= a.attempts; i++ {
		if i > 1 && !a.reuseKey {
			key = fmt.Sprintf("%s-%d-attempt%d", a.session, a.n, i)
		}
		sent := map[string]any{}
		for k, v := range args {
			sent[k] = v
		}
		if !a.noKey {
			sent["idempotencyKey"] = key
		}
		var params any = sent
		if i > 1 && a.regenerated != "" {
			b, _ := json.Marshal(key)
			params = json.RawMessage(fmt.Sprintf(strings.TrimSuffix(a.regenerated, "}")+`,"idempotencyKey":%s}`, args["accountId"], b))
		}
		cctx, cancel := context.WithTimeout(ctx, a.attempt)
		res, err := a.cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: params})
		cancel()
		if err == nil && !res.IsError {
			return res, nil
		}
		lastErr = err
		if err == nil && inProgress(res) && i > 1 && a.reuseKey && time.Now().Before(waitUntil) {
			// The server still works on the key (the late original of a timed-out call): a
			// framework backs off and asks again until the work is done, which is no new
			// attempt. However long a busy machine keeps the original running, the retry
			// ends with its answer.
			i--
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil, fmt.Errorf("%s failed after %d attempts: %w", tool, a.attempts, lastErr)
}

// inProgress reports whether a tool error says the key's first call is still being processed
// (the reference server's 409 idempotency_key_in_progress).
func inProgress(res *mcp.CallToolResult) bool {
	if !res.IsError {
		return false
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok && strings.Contains(t.Text, "in_progress") {
			return true
		}
	}
	return false
}

// refunds counts the refunds the server executed for an account, through its read-only tool.
func refunds(t *testing.T, cs *mcp.ClientSession, acct string) int {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_refunds", Arguments: map[string]any{"accountId": acct}})
	if err != nil {
		t.Fatalf("list_refunds: %v", err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Refunds []any `json:"refunds"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("list_refunds answer %s: %v", b, err)
	}
	return len(out.Refunds)
}

// refundsAtLeast polls list_refunds until it shows want refunds (or a minute, which only bounds
// a hang, passes): a call the proxy held (the timeout fault) reaches the server only once the
// agent has given up, so it may still be executing when the agent's loop returns. It returns
// the last count.
func refundsAtLeast(t *testing.T, cs *mcp.ClientSession, acct string, want int) int {
	t.Helper()
	var got int
	testenv.Until(time.Minute, func() bool { got = refunds(t, cs, acct); return got >= want })
	return got
}

func TestStdioProxyJudgesRealAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: long: each case waits out a real agent's 3s attempt timeout")
	}
	for _, tc := range []struct {
		name     string
		flags    []string
		agent    agent
		wantExit int
		// wantRefunds is what the server really executed, counted independently of the verdict.
		wantRefunds int
		want        []string
		wantFaults  []string
	}{
		{
			name:  "retry reuses the key after a lost response",
			flags: []string{"--fault", "lose-response:issue_refund#1"},
			agent: agent{attempts: 3, reuseKey: true}, wantExit: 0, wantRefunds: 1,
			want: []string{"2 mutating, 1 with a fault injected", "PASS"}, wantFaults: []string{"lose-response", ""},
		},
		{
			name:  "retry mints a new key after a lost response",
			flags: []string{"--fault", "lose-response:issue_refund#1"},
			agent: agent{attempts: 3, reuseKey: false}, wantExit: 1, wantRefunds: 2,
			want:       []string{"✗ would charge twice: issue_refund call #1 (response lost; the server executed it) was retried as call #2 with key", "FAIL: 1 violation"},
			wantFaults: []string{"lose-response", ""},
		},
		{
			name:  "retry respells the amount with a new key after a lost response",
			flags: []string{"--fault", "lose-response:issue_refund#1"},
			agent: agent{attempts: 3, regenerated: `{"accountId":%q,"amount":12.50}`}, wantExit: 1, wantRefunds: 2,
			want:       []string{"✗ would charge twice: issue_refund call #1 (response lost; the server executed it) was retried as call #2 with key", "FAIL: 1 violation"},
			wantFaults: []string{"lose-response", ""},
		},
		{
			name:  "retry spells out the default currency with a new key after a lost response",
			flags: []string{"--fault", "lose-response:issue_refund#1"},
			agent: agent{attempts: 3, regenerated: `{"accountId":%q,"amount":1.25e1,"currency":"USD"}`}, wantExit: 1, wantRefunds: 2,
			want:       []string{`(the retry's arguments differ only in: currency)`, "FAIL: 1 violation"},
			wantFaults: []string{"lose-response", ""},
		},
		{
			name:  "retry respells the amount with the same key after a lost response",
			flags: []string{"--fault", "lose-response:issue_refund#1"},
			agent: agent{attempts: 3, reuseKey: true, regenerated: `{"accountId":%q,"amount":12.50}`}, wantExit: 0, wantRefunds: 1,
			want: []string{"PASS"}, wantFaults: []string{"lose-response", ""},
		},
		{
			name:  "a call with another amount after a lost response is a new call",
			flags: []string{"--fault", "lose-response:issue_refund#1"},
			agent: agent{attempts: 2, regenerated: `{"accountId":%q,"amount":13}`}, wantExit: 0, wantRefunds: 2,
			want: []string{"! outcome left unknown to the agent: issue_refund call #1", "PASS"}, wantFaults: []string{"lose-response", ""},
		},
		{
			name:  "retry reuses the key after an injected JSON-RPC error",
			flags: []string{"--fault", "error:503:issue_refund#1"},
			agent: agent{attempts: 3, reuseKey: true}, wantExit: 0, wantRefunds: 1,
			want: []string{"PASS"}, wantFaults: []string{"error:503", ""},
		},
		{
			name:  "a lost response never retried is reported",
			flags: []string{"--fault", "lose-response:issue_refund#1"},
			agent: agent{attempts: 1, reuseKey: true}, wantExit: 0, wantRefunds: 1,
			want: []string{"! outcome left unknown to the agent: issue_refund call #1", "PASS"}, wantFaults: []string{"lose-response"},
		},
		{
			name:  "a lost response never retried fails with --require-retry",
			flags: []string{"--fault", "lose-response:issue_refund#1", "--require-retry"},
			agent: agent{attempts: 1, reuseKey: true}, wantExit: 1, wantRefunds: 1,
			want: []string{"✗ outcome left unknown to the agent", "FAIL"}, wantFaults: []string{"lose-response"},
		},
		{
			name:  "retry reuses the key after a timeout",
			flags: []string{"--fault", "timeout:issue_refund#1"},
			agent: agent{attempts: 4, reuseKey: true}, wantExit: 0, wantRefunds: 1,
			// The late original and the retry may meet at the server: a 409 "in progress"
			// makes the agent retry once more.
			want: []string{"PASS"}, wantFaults: []string{"timeout", "", "..."},
		},
		{
			name:  "retry mints a new key after a timeout",
			flags: []string{"--fault", "timeout:issue_refund#1"},
			agent: agent{attempts: 3, reuseKey: false}, wantExit: 1, wantRefunds: 2,
			want:       []string{"✗ would charge twice: issue_refund call #1 (timed out; the server executed it) was retried as call #2 with key", "FAIL: 1 violation"},
			wantFaults: []string{"timeout", ""},
		},
		{
			name:  "--hold answers a lost response with a timeout error before the agent's own",
			flags: []string{"--fault", "lose-response:issue_refund#1", "--hold", "300ms"},
			agent: agent{attempts: 3, reuseKey: true, attempt: time.Minute}, wantExit: 0, wantRefunds: 1,
			// A busy machine may keep the server on the first call past the hold: the retry is
			// then told "in progress" and asked again.
			want: []string{"PASS"}, wantFaults: []string{"lose-response", "", "..."},
		},
		{
			name:  "a delayed call needs no retry",
			flags: []string{"--fault", "delay:100ms:issue_refund#1"},
			agent: agent{attempts: 3, reuseKey: false}, wantExit: 0, wantRefunds: 1,
			want: []string{"PASS"}, wantFaults: []string{"delay:100ms"},
		},
		{
			name:  "keys not matching --key-pattern",
			flags: []string{"--key-pattern", "^sess-[0-9]+$"},
			agent: agent{attempts: 1}, wantExit: 1, wantRefunds: 1,
			want: []string{`does not match --key-pattern ^sess-[0-9]+$`}, wantFaults: []string{""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tracePath, jsonPath := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "verdict.json")
			cs, proc, stderr := proxied(t, append(tc.flags, "--record", tracePath, "--json", jsonPath)...)
			defer func() {
				if t.Failed() {
					t.Logf("proxy stderr:\n%s", stderr)
				}
			}()
			a := tc.agent
			a.cs, a.session = cs, "agent7"
			if a.attempt == 0 {
				a.attempt = 3 * time.Second
			}
			acct := "acct_" + strings.ReplaceAll(tc.name, " ", "_")
			ctx := context.Background()
			if _, err := a.call(ctx, "issue_refund", map[string]any{"accountId": acct, "amount": 12.5}); err != nil && a.attempts > 1 {
				t.Fatalf("agent: %v\n%s", err, stderr)
			}
			if got := refundsAtLeast(t, cs, acct, tc.wantRefunds); got != tc.wantRefunds {
				t.Errorf("the server executed %d refunds, want %d", got, tc.wantRefunds)
			}
			_ = cs.Close()
			if got := proc.ProcessState.ExitCode(); got != tc.wantExit {
				t.Errorf("proxy exited %d, want %d\n%s", got, tc.wantExit, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("verdict lacks %q:\n%s", w, stderr)
				}
			}
			h, calls, err := trace.ReadFile(context.Background(), tracePath)
			if err != nil {
				t.Fatal(err)
			}
			if h.Transport != "mcp-stdio" || !strings.Contains(h.Endpoint, "refundserver --stdio") {
				t.Errorf("trace header %+v", h)
			}
			var faults []string
			for _, c := range calls {
				if c.Tool == "issue_refund" {
					faults = append(faults, c.Fault)
					if !c.Mutating || c.Key == "" || c.KeyCarrier != "arg idempotencyKey" {
						t.Errorf("trace call %d %s key %q %s mutating %v: want mutating with a key in arg idempotencyKey", c.Seq, c.Tool, c.Key, c.KeyCarrier, c.Mutating)
					}
				} else if c.Mutating {
					t.Errorf("trace call %d %s: list_refunds is readOnlyHint, want not mutating", c.Seq, c.Tool)
				}
			}
			if n := len(tc.wantFaults) - 1; n > 0 && tc.wantFaults[n] == "..." && len(faults) >= n {
				faults = faults[:n] // the rest are further clean retries
				tc.wantFaults = tc.wantFaults[:n]
			}
			if fmt.Sprint(faults) != fmt.Sprint(tc.wantFaults) {
				t.Errorf("faults on issue_refund calls = %q, want %q", faults, tc.wantFaults)
			}
			if calls[0].Fault == "lose-response" && (calls[0].Outcome != "info" || !bytes.Contains(calls[0].Result, []byte("refundId"))) {
				t.Errorf("a lost call is recorded as info with the server's answer kept, got %s %s", calls[0].Outcome, calls[0].Result)
			}
			if _, err := os.Stat(jsonPath); err != nil {
				t.Errorf("--json: %v", err)
			}
		})
	}
}

// TestStdioTimeoutReachesServerLate shows what sets a timeout apart from a lost response over
// MCP: the server does not see the call while the agent waits for it, and executes it once the
// agent gave up (the request arrives late), its answer dropped.
func TestStdioTimeoutReachesServerLate(t *testing.T) {
	dir := t.TempDir()
	tracePath, serverIn := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "server-stdin.jsonl")
	sent := &sentTransport{tool: "issue_refund", sent: make(chan struct{})}
	connectCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// tee keeps a copy of everything the proxy sends the server, in the order the server reads it.
	cs, proc, stderr, err := connectProxyVia(connectCtx, t, func(tr mcp.Transport) mcp.Transport { sent.Transport = tr; return sent },
		[]string{"--fault", "timeout:issue_refund#1", "--record", tracePath},
		"sh", "-c", `tee "$0" | exec "$1" --stdio`, serverIn, refundServer(t))
	if err != nil {
		t.Fatalf("connect through the proxy: %v\n%s", err, stderr)
	}
	acct := "acct_late"
	ctx, giveUp := context.WithCancel(context.Background())
	answered := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "issue_refund",
			Arguments: map[string]any{"accountId": acct, "amount": 3, "idempotencyKey": "late-1"}})
		answered <- err
	}()
	// Once the held call is on the proxy's stdin, a list written after it is read by the proxy
	// after it. The server's stdin up to that list shows whether the proxy sent the held call
	// on: a positive event (the list arrived) decides, not a pause.
	select {
	case <-sent.sent:
	case err := <-answered:
		t.Fatalf("the held call ended before it was sent: %v", err)
	}
	if got := refunds(t, cs, acct); got != 0 {
		t.Fatalf("the server executed %d refunds while the agent still waited, want 0", got)
	}
	var in []byte
	testenv.Eventually(t, time.Minute, func() bool {
		in, _ = os.ReadFile(serverIn)
		return bytes.Contains(in, []byte(`"list_refunds"`))
	}, "the list reached the server's stdin")
	if i := bytes.Index(in, []byte(`"list_refunds"`)); bytes.Contains(in[:i], []byte(`"late-1"`)) {
		t.Fatalf("the proxy sent the held call to the server while the agent still waited:\n%s", in[:i])
	}
	select {
	case err := <-answered:
		t.Fatalf("the agent got an answer to a held call: %v", err)
	default:
	}
	giveUp() // the SDK sends notifications/cancelled
	if err := <-answered; err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	if !testenv.Until(time.Minute, func() bool { return refunds(t, cs, acct) == 1 }) {
		t.Fatalf("the held call never reached the server after the agent gave up\n%s", stderr)
	}
	_ = cs.Close()
	if got := proc.ProcessState.ExitCode(); got != 0 || !strings.Contains(stderr.String(), "(timed out; the server executed it) was never retried") {
		t.Errorf("exit %d, verdict:\n%s", got, stderr)
	}
	_, calls, err := trace.ReadFile(context.Background(), tracePath)
	if err != nil {
		t.Fatal(err)
	}
	held, after := 0, 0
	for _, c := range calls {
		switch {
		case c.Tool == "issue_refund":
			held = c.Seq
			if c.Outcome != "info" || !bytes.Contains(c.Result, []byte("refundId")) {
				t.Errorf("the late call is recorded as %s with %s, want info with the server's answer", c.Outcome, c.Result)
			}
		case held > 0 && bytes.Contains(c.Result, []byte(`"refunds":[]`)):
			after++
		}
	}
	if after == 0 {
		t.Errorf("no list_refunds after the held call saw it unexecuted; trace: %+v", calls)
	}
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStdioProxyNothingJudged shows that a session in which no key could be judged never passes:
// a tool server that never answers initialize or dies at once is an error that names it and
// quotes its stderr, and a clean session without a mutating call says so instead of PASS.
func TestStdioProxyNothingJudged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server []string
		// readOnly is how many read-only calls the agent makes; -1 when it cannot connect.
		readOnly int
		// giveUp, when set, is how long the agent waits for the handshake before it gives up;
		// the other sessions connect, or fail because the server or the proxy ended, however
		// long a busy machine takes to start them.
		giveUp   time.Duration
		wantExit int
		want     []string
		result   string
	}{
		{
			name:     "the server never answers initialize",
			server:   []string{"sh", "-c", "echo booting the tool server >&2; cat >/dev/null"},
			readOnly: -1, giveUp: 3 * time.Second, wantExit: 1, result: "error",
			want: []string{"idemtest proxy: 0 calls", "ERROR: tool server \"sh -c echo booting the tool server >&2; cat >/dev/null\" never answered the agent's server/discover request; the end of its stderr:\n  booting the tool server\n"},
		},
		{
			name:     "the server exits at once",
			server:   []string{"sh", "-c", "echo fatal: no API token >&2; exit 3"},
			readOnly: -1, wantExit: 1, result: "error",
			want: []string{"ERROR: tool server \"sh -c echo fatal: no API token >&2; exit 3\" ended before the agent disconnected (exit status 3); the end of its stderr:\n  fatal: no API token\n"},
		},
		{
			name:   "a clean session without a tool call",
			server: []string{refundServer(t), "--stdio"}, wantExit: 0, result: "nothing-judged",
			want: []string{"idemtest proxy: 0 calls, 0 mutating, 0 with a fault injected\nnothing judged: the agent made no tool call\n"},
		},
		{
			name:   "a clean session with read-only calls only",
			server: []string{refundServer(t), "--stdio"}, readOnly: 2, wantExit: 0, result: "nothing-judged",
			want: []string{"nothing judged: the agent made no mutating tool call (2 read-only)\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			jsonPath, junitPath := filepath.Join(dir, "verdict.json"), filepath.Join(dir, "agent.xml")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			connectCtx, connectCancel := ctx, context.CancelFunc(func() {})
			if tc.giveUp > 0 {
				connectCtx, connectCancel = context.WithTimeout(ctx, tc.giveUp)
			}
			defer connectCancel()
			cs, proc, stderr, err := connectProxy(connectCtx, t, []string{"--json", jsonPath, "--junit", junitPath}, tc.server...)
			if (err != nil) != (tc.readOnly < 0) {
				t.Fatalf("connect: %v\n%s", err, stderr)
			}
			if cs != nil {
				for range tc.readOnly {
					refunds(t, cs, "acct_nothing")
				}
				_ = cs.Close()
			}
			out := stderr.String()
			if got := proc.ProcessState.ExitCode(); got != tc.wantExit {
				t.Errorf("proxy exited %d, want %d\n%q", got, tc.wantExit, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("verdict lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "PASS") {
				t.Errorf("a session that judged nothing passed:\n%s", out)
			}
			b, err := os.ReadFile(jsonPath)
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				Result string `json:"result"`
			}
			if err := json.Unmarshal(b, &v); err != nil || v.Result != tc.result {
				t.Errorf("--json result %q (%v), want %q:\n%s", v.Result, err, tc.result, b)
			}
			x, err := os.ReadFile(junitPath)
			if err != nil {
				t.Fatal(err)
			}
			wantJUnit := `<skipped message="nothing judged: the agent made no`
			if tc.result == "error" {
				wantJUnit = `<testcase name="tool-server" classname="idemtest.proxy">` + "\n" + `      <error message="tool server`
			}
			if !strings.Contains(string(x), wantJUnit) {
				t.Errorf("--junit lacks %q:\n%s", wantJUnit, x)
			}
		})
	}
}
