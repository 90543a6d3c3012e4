package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/proc"
	"github.com/idemtest/idemtest/internal/reportschema/schemacheck"
	"github.com/idemtest/idemtest/internal/testenv"
	"github.com/idemtest/idemtest/internal/trace"
)

// process is a started program whose stderr is kept.
type process struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
}

var listening = regexp.MustCompile(`listening on (http://[^ ]+)`)

// startListening starts a program in a process group of its own and waits for it to print
// "listening on http://ADDR" on stderr; it is stopped when the test ends.
func startListening(t *testing.T, name string, env []string, args ...string) (*process, string) {
	t.Helper()
	c := exec.Command(name, args...)
	c.Env = append(os.Environ(), env...)
	proc.Isolate(c)
	pr, pw := io.Pipe()
	buf := &lockedBuffer{b: &bytes.Buffer{}}
	c.Stderr = pw
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: c, stderr: buf, done: make(chan struct{})}
	go func() { _ = c.Wait(); pw.Close(); close(p.done) }()
	t.Cleanup(func() {
		proc.Kill(c.Process.Pid)
		<-p.done
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		found := false
		for sc.Scan() {
			buf.Write(append(sc.Bytes(), '\n'))
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && !found {
				found = true
				addr <- m[1]
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("%s exited before listening:\n%s", name, buf.String())
		}
		return p, a
	case <-time.After(time.Minute):
		t.Fatalf("%s did not listen within a minute:\n%s", name, buf.String())
	}
	return nil, ""
}

// terminate sends SIGTERM and returns the exit code once the process has exited.
func (p *process) terminate(t *testing.T) int {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("no exit within a minute of SIGTERM:\n%s", p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// startProxy starts the reference server on HTTP and "idemtest proxy --listen" in front of it,
// with --upstream the server's URL and upstreamPath.
func startProxy(t *testing.T, upstreamPath string, flags ...string) (proxyURL, serverURL string, proxy *process) {
	t.Helper()
	_, serverURL = startListening(t, refundServer(t), nil, "--addr", "127.0.0.1:0")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"proxy", "--listen", "127.0.0.1:0", "--upstream", serverURL + upstreamPath}, flags...)
	proxy, proxyURL = startListening(t, self, []string{"IDEMTEST_PROXY_TEST_MAIN=1"}, args...)
	return proxyURL, serverURL, proxy
}

// executed counts the refunds the reference server executed for an account, asking it
// directly, not through the proxy.
func executed(t *testing.T, serverURL, acct string) int {
	t.Helper()
	resp, err := http.Get(serverURL + "/refunds?accountId=" + url.QueryEscape(acct))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Refunds []any `json:"refunds"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return len(out.Refunds)
}

type retryCase struct {
	name        string
	reuseKey    bool
	wantExit    int
	wantRefunds int
	want        string
}

var retryCases = []retryCase{
	{"retry reuses the key", true, 0, 1, "PASS"},
	{"retry mints a new key", false, 1, 2, "✗ would charge twice: issue_refund call #1 (response lost; the server executed it) was retried as call #2"},
}

func TestStreamableHTTPProxyJudgesRealAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: long: each case waits out a real agent's 3s attempt timeout")
	}
	cases := append(slices.Clone(retryCases),
		retryCase{"retry mints a new key after an injected error", false, 1, 1, "✗ would charge twice: issue_refund call #1 (answered error:503 by idemtest) was retried as call #2"},
		retryCase{"retry reuses the key after a timeout", true, 0, 1, "PASS"},
		retryCase{"retry mints a new key after a timeout", false, 1, 2, "✗ would charge twice: issue_refund call #1 (timed out; the server executed it) was retried as call #2"},
		retryCase{"retry reuses the key after a lost response held for --hold", true, 0, 1, "PASS"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			flags := []string{"--fault", "lose-response:issue_refund#1"}
			attempt := 3 * time.Second
			switch {
			case strings.Contains(tc.name, "injected error"):
				flags[1] = "error:503:issue_refund#1"
			case strings.Contains(tc.name, "timeout"):
				flags[1] = "timeout:issue_refund#1"
			case strings.Contains(tc.name, "--hold"):
				// The agent would wait a minute: the proxy's timeout error makes it retry.
				flags, attempt = append(flags, "--hold", "300ms"), time.Minute
			}
			proxyURL, serverURL, proxy := startProxy(t, "/mcp", flags...)
			client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: proxyURL + "/mcp", MaxRetries: -1}, nil)
			if err != nil {
				t.Fatalf("connect through the proxy: %v\n%s", err, proxy.stderr.String())
			}
			a := agent{cs: cs, session: "agent9", attempts: 3, attempt: attempt, reuseKey: tc.reuseKey}
			acct := "acct_http_" + strings.ReplaceAll(tc.name, " ", "_")
			if _, err := a.call(ctx, "issue_refund", map[string]any{"accountId": acct, "amount": 7.5}); err != nil {
				t.Fatalf("agent: %v\n%s", err, proxy.stderr.String())
			}
			_ = cs.Close()
			if got := executedAtLeast(t, serverURL, acct, tc.wantRefunds); got != tc.wantRefunds {
				t.Errorf("the server executed %d refunds, want %d", got, tc.wantRefunds)
			}
			if code := proxy.terminate(t); code != tc.wantExit {
				t.Errorf("proxy exited %d, want %d", code, tc.wantExit)
			}
			t.Logf("proxy stderr:\n%s", proxy.stderr.String())
			if !strings.Contains(proxy.stderr.String(), tc.want) {
				t.Errorf("verdict lacks %q:\n%s", tc.want, proxy.stderr.String())
			}
		})
	}
}

// httpAgent is a plain http.Client retry loop around a JSON tool API.
func httpAgent(proxyURL, acct string, reuseKey bool) error {
	client := &http.Client{Timeout: 30 * time.Second}
	key := "agent11-1"
	var last error
	for attempt := 1; attempt <= 3; attempt++ {
		if attempt > 1 && !reuseKey {
			key = fmt.Sprintf("agent11-1-attempt%d", attempt)
		}
		req, _ := http.NewRequest(http.MethodPost, proxyURL+"/tools/issue_refund", strings.NewReader(fmt.Sprintf(`{"accountId":%q,"amount":3.25}`, acct)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := client.Do(req)
		if err != nil {
			last = err
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 300 {
			return nil
		}
		last = fmt.Errorf("status %d", resp.StatusCode)
	}
	return last
}

// executedAtLeast polls the server's refunds until it shows want (or a minute, which only
// bounds a hang, passes): a call the proxy held (the timeout fault) reaches the server only once
// the agent has given up, so it may still be executing when the agent's loop returns. It returns
// the last count.
func executedAtLeast(t *testing.T, serverURL, acct string, want int) int {
	t.Helper()
	var got int
	testenv.Until(time.Minute, func() bool { got = executed(t, serverURL, acct); return got >= want })
	return got
}

func TestPlainHTTPProxyJudgesRealAgent(t *testing.T) {
	for _, fault := range []string{"lose-response:issue_refund#1", "error:503:issue_refund#1"} {
		for _, tc := range retryCases {
			t.Run(fault+"/"+tc.name, func(t *testing.T) {
				tracePath := filepath.Join(t.TempDir(), "trace.jsonl")
				proxyURL, serverURL, proxy := startProxy(t, "", "--http", "--fault", fault, "--record", tracePath)
				acct := "acct_plain_" + strings.NewReplacer(" ", "_", ":", "_", "#", "_").Replace(fault+tc.name)
				if err := httpAgent(proxyURL, acct, tc.reuseKey); err != nil {
					t.Fatalf("agent: %v\n%s", err, proxy.stderr.String())
				}
				wantRefunds, want := tc.wantRefunds, tc.want
				if strings.HasPrefix(fault, "error") {
					// The injected error never reached the server: one execution either way,
					// but a new key on the retry is still what would charge twice.
					wantRefunds = 1
					want = strings.Replace(want, "(response lost; the server executed it)", "(answered error:503 by idemtest)", 1)
				}
				if got := executed(t, serverURL, acct); got != wantRefunds {
					t.Errorf("the server executed %d refunds, want %d", got, wantRefunds)
				}
				if code := proxy.terminate(t); code != tc.wantExit {
					t.Errorf("proxy exited %d, want %d", code, tc.wantExit)
				}
				if !strings.Contains(proxy.stderr.String(), want) {
					t.Errorf("verdict lacks %q:\n%s", want, proxy.stderr.String())
				}
				h, calls, err := trace.ReadFile(context.Background(), tracePath)
				if err != nil {
					t.Fatal(err)
				}
				if h.Transport != "http" || len(calls) != 2 {
					t.Fatalf("trace: %+v, %d calls, want transport http and 2 calls", h, len(calls))
				}
				first, retry := calls[0], calls[1]
				// Both faults leave the agent with an indeterminate outcome (a reset, a 503).
				if first.Tool != "issue_refund" || first.KeyCarrier != "header Idempotency-Key" || first.Key != "agent11-1" ||
					first.Outcome != "info" || first.Fault != strings.TrimSuffix(fault, ":issue_refund#1") {
					t.Errorf("first call in the trace: %+v", first)
				}
				if retry.Outcome != "ok" || retry.Status != 200 || retry.Replayed != (tc.reuseKey && fault == "lose-response:issue_refund#1") {
					t.Errorf("retry in the trace: %s %d replayed %v", retry.Outcome, retry.Status, retry.Replayed)
				}
			})
		}
	}
}

// TestPlainHTTPProxyRegeneratedRetry is an agent that rebuilds its request for the retry after
// a lost response (Python's json.dumps writes 10 as 10.0; a model spells out a default): with a
// new key the server refunds twice and the verdict fails; with the same key, or for a call that
// really is another (another amount), it passes.
func TestPlainHTTPProxyRegeneratedRetry(t *testing.T) {
	for _, tc := range []struct {
		name        string
		retryKey    string
		retryBody   string
		wantExit    int
		wantRefunds int
		want        string
	}{
		{"amount respelled, new key", "k2", `{"accountId":%q,"amount":10.0}`, 1, 2,
			`✗ would charge twice: issue_refund call #1 (response lost; the server executed it) was retried as call #2 with key "k2" instead of "k1"` + "\n"},
		{"default currency spelled out, new key", "k2", `{"accountId":%q,"amount":1e1,"currency":"USD"}`, 1, 2,
			`was retried as call #2 with key "k2" instead of "k1" (the retry's arguments differ only in: currency)`},
		{"amount respelled, same key", "k1", `{"accountId":%q,"amount":10.0}`, 0, 1, "PASS"},
		{"another amount, new key", "k2", `{"accountId":%q,"amount":11}`, 0, 2, "was never retried (reported; --require-retry makes it fail)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxyURL, serverURL, proxy := startProxy(t, "", "--http", "--fault", "lose-response:issue_refund#1")
			acct := "acct_regen_" + strings.NewReplacer(" ", "_", ",", "").Replace(tc.name)
			client := &http.Client{Timeout: 30 * time.Second}
			for i, call := range []struct{ key, body string }{{"k1", `{"accountId":%q,"amount":10}`}, {tc.retryKey, tc.retryBody}} {
				req, _ := http.NewRequest(http.MethodPost, proxyURL+"/tools/issue_refund", strings.NewReader(fmt.Sprintf(call.body, acct)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", call.key)
				resp, err := client.Do(req)
				if i == 0 {
					if err == nil {
						resp.Body.Close()
						t.Fatalf("the lost response reached the agent: %s", resp.Status)
					}
					continue
				}
				if err != nil {
					t.Fatalf("retry: %v\n%s", err, proxy.stderr.String())
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if got := executed(t, serverURL, acct); got != tc.wantRefunds {
				t.Errorf("the server executed %d refunds, want %d", got, tc.wantRefunds)
			}
			if code := proxy.terminate(t); code != tc.wantExit {
				t.Errorf("proxy exited %d, want %d", code, tc.wantExit)
			}
			if !strings.Contains(proxy.stderr.String(), tc.want) {
				t.Errorf("verdict lacks %q:\n%s", tc.want, proxy.stderr.String())
			}
		})
	}
}

// TestStreamableHTTPProxyUpstreamNeverAnswers points the proxy at a path the server does not
// serve, the common slip of an --upstream without its /mcp: the agent cannot even connect, and
// the proxy says so instead of passing a session with no call in it.
func TestStreamableHTTPProxyUpstreamNeverAnswers(t *testing.T) {
	proxyURL, serverURL, proxy := startProxy(t, "/nope")
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: proxyURL + "/nope", MaxRetries: -1}, nil); err == nil {
		_ = cs.Close()
		t.Fatal("the agent connected to a server that does not serve MCP there")
	}
	code := proxy.terminate(t)
	out := proxy.stderr.String()
	want := "ERROR: tool server at " + serverURL + "/nope never answered the agent's "
	if code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "(last: HTTP 404 Not Found)\n") || strings.Contains(out, "PASS") {
		t.Errorf("exit %d, want 1 and %q … (last: HTTP 404 Not Found):\n%s", code, want, out)
	}
}

func TestProxyRefusesNonLoopback(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:0", "--upstream", "http://127.0.0.1:1"}, "not a loopback address"},
		{[]string{"--listen", "127.0.0.1:0", "--upstream", "http://example.com/mcp"}, "--allow-host example.com"},
		{[]string{"--fault", "lose-response:issue_refund", "--", "true"}, "no TOOL#N"},
		{nil, "no tool server"},
		{[]string{"--", "no-such-server-command"}, "server command"},
		{[]string{"--fault-rate", "0.3", "--fault-kinds", "lose-response,reset", "--", "true"}, `--fault-kinds "reset": unknown kind "reset"`},
		{[]string{"--hold", "-1s", "--", "true"}, "--hold must not be negative"},
		{[]string{"--hold", "1s", "--http", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1"}, "--hold is for MCP"},
	} {
		c := exec.Command(self, append([]string{"proxy"}, tc.args...)...)
		c.Env = append(os.Environ(), "IDEMTEST_PROXY_TEST_MAIN=1")
		out, _ := c.CombinedOutput()
		if c.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("proxy %v: exit %d, output %q; want 2 and %q", tc.args, c.ProcessState.ExitCode(), out, tc.want)
		}
	}
}

// TestHTTPProxyStopsWithHungUpstream: SIGTERM ends the proxy even while a call it forwarded
// (with a lost response, so detached from the agent) waits on an upstream that never answers.
func TestHTTPProxyStopsWithHungUpstream(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	upstream := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go upstream.Serve(ln)
	defer upstream.Close()
	defer close(release)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	proxy, proxyURL := startListening(t, self, []string{"IDEMTEST_PROXY_TEST_MAIN=1"},
		"proxy", "--listen", "127.0.0.1:0", "--upstream", "http://"+ln.Addr().String(), "--http", "--fault", "lose-response:issue_refund#1")
	agentDone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, proxyURL+"/tools/issue_refund", strings.NewReader(`{"amount":1}`))
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		agentDone <- err
	}()
	select {
	case <-arrived:
	case <-time.After(time.Minute):
		t.Fatalf("the call never reached the upstream:\n%s", proxy.stderr.String())
	}
	if code := proxy.terminate(t); code != 0 {
		t.Errorf("proxy exited %d, want 0:\n%s", code, proxy.stderr.String())
	}
	if err := <-agentDone; err == nil {
		t.Error("the agent got an answer")
	}
	if want := "! outcome left unknown to the agent: issue_refund call #1 (response lost; the server never answered and may have executed it) was never retried"; !strings.Contains(proxy.stderr.String(), want) {
		t.Errorf("verdict lacks %q:\n%s", want, proxy.stderr.String())
	}
}

// TestStreamableHTTPSessionThatNeverGotGoing: an agent that opened a session but never completed
// its handshake (here it sends initialize, reads the answer and goes away, as an agent that
// could not read the answer does) is an error naming where it stopped, in every report; an
// agent that completed its handshake and called nothing is "nothing judged", exit 0.
func TestStreamableHTTPSessionThatNeverGotGoing(t *testing.T) {
	for _, tc := range []struct {
		name      string
		handshake bool
		wantExit  int
		result    string
		stopped   string
		lastLine  string
		junit     string
	}{
		{"initialize answered, never confirmed", false, 1, "error", "no-initialized",
			"ERROR: the agent's MCP session never got going: the tool server answered the agent's initialize request (id 0), but the agent sent no notifications/initialized and no request after it: the answer did not reach the agent, or the agent gave up on it",
			`<testcase name="agent-session" classname="idemtest.proxy">` + "\n" + `      <error message="the agent&#39;s MCP session never got going`},
		{"handshake completed, no call", true, 0, "nothing-judged", "",
			"nothing judged: the agent made no tool call", `<skipped message="nothing judged: the agent made no tool call">`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			jsonPath, junitPath := filepath.Join(dir, "verdict.json"), filepath.Join(dir, "agent.xml")
			proxyURL, _, proxy := startProxy(t, "/mcp", "--json", jsonPath, "--junit", junitPath)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if tc.handshake {
				client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
				cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: proxyURL + "/mcp", MaxRetries: -1}, nil)
				if err != nil {
					t.Fatalf("connect: %v\n%s", err, proxy.stderr.String())
				}
				_ = cs.Close()
			} else {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, proxyURL+"/mcp", strings.NewReader(
					`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.Contains(string(b), `"id":0,"result"`) {
					t.Fatalf("initialize through the proxy: %d %q", resp.StatusCode, b)
				}
			}
			code := proxy.terminate(t)
			out := strings.TrimRight(proxy.stderr.String(), "\n")
			if code != tc.wantExit || !strings.HasSuffix(out, "\n"+tc.lastLine) {
				t.Errorf("exit %d, want %d and last line %q:\n%s", code, tc.wantExit, tc.lastLine, out)
			}
			b, err := os.ReadFile(jsonPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := schemacheck.Validate("proxy", b); err != nil {
				t.Errorf("--json: %v\n%s", err, b)
			}
			var v struct {
				Result, Stopped, Error string
			}
			if err := json.Unmarshal(b, &v); err != nil || v.Result != tc.result || v.Stopped != tc.stopped {
				t.Errorf("--json result %q stopped %q (%v), want %q %q:\n%s", v.Result, v.Stopped, err, tc.result, tc.stopped, b)
			}
			x, err := os.ReadFile(junitPath)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(x), tc.junit) {
				t.Errorf("--junit lacks %q:\n%s", tc.junit, x)
			}
		})
	}
}
