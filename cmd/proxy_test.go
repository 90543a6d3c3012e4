package cmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/proxy"
	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
	"github.com/idemtest/idemtest/internal/proxy/fault"
	"github.com/idemtest/idemtest/internal/trace"
)

// agentCall is a mutating call of the agent through the proxy, with key (none when "").
func agentCall(seq int, key string) trace.Call {
	return trace.Call{Seq: seq, Tool: "issue_refund", Key: key, KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: "ok",
		Args: []byte(`{"amount":1,"idempotencyKey":"` + key + `"}`)}
}

// proxyJSON is what a consumer reads of proxy --json.
type proxyJSON struct {
	Result     string `json:"result"`
	Calls      int    `json:"calls"`
	Mutating   int    `json:"mutating"`
	Violations int    `json:"violations"`
	Findings   []struct {
		Check string `json:"check"`
	} `json:"findings"`
	Error string `json:"error"`
}

// TestProxyOptions: idemtest proxy from argv to the session it runs, the verdict on the calls
// the session returns, the reports and the exit code, with the session faked (the verdict is
// the real one).
func TestProxyOptions(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// calls, upstream and err are the session's outcome (calls nil: the session must not
		// run); cancel cancels the command inside it (the signal that ends an HTTP proxy).
		calls    []trace.Call
		upstream *proxy.UpstreamError
		err      error
		cancel   bool
		code     ExitCode
		stderr   string
		check    func(t *testing.T, s *proxy.Session, r ran, dir string)
	}{
		{
			name: "flags reach the stdio session", calls: []trace.Call{agentCall(1, "k1")}, code: ExitOK,
			args: []string{"proxy", "--fault", "lose-response:issue_refund#2", "--fault-rate", "0.5", "--fault-kinds", "timeout",
				"--key-meta", "ik", "--mutating", "issue_refund", "--hold", "2s", "--", "true", "--stdio"},
			stderr: "idemtest proxy: --fault-rate 0.5 --seed 42",
			check: func(t *testing.T, s *proxy.Session, _ ran, _ string) {
				o := s.Options
				if !slices.Equal(s.Stdio.Command, []string{"true", "--stdio"}) || s.HTTP.Upstream != "" {
					t.Errorf("stdio %+v, http %+v", s.Stdio, s.HTTP)
				}
				if len(o.Faults) != 1 || o.Faults[0].Kind != fault.LoseResponse || o.Faults[0].Tool != "issue_refund" || o.Faults[0].N != 2 {
					t.Errorf("faults %+v", o.Faults)
				}
				if o.FaultRate != 0.5 || o.Seed != 42 || len(o.FaultKinds) != 1 || o.FaultKinds[0].Kind != fault.Timeout ||
					o.Key.Meta != "ik" || !slices.Equal(o.Mutating, []string{"issue_refund"}) || o.Hold != 2*time.Second {
					t.Errorf("options %+v", o)
				}
			},
		},
		{
			name: "--seed is used as given", calls: []trace.Call{agentCall(1, "k1")}, code: ExitOK,
			args: []string{"proxy", "--fault-rate", "0.1", "--seed", "7", "--", "true"},
			check: func(t *testing.T, s *proxy.Session, r ran, _ string) {
				if s.Options.Seed != 7 || s.Options.Key.Arg != "idempotencyKey" {
					t.Errorf("options %+v", s.Options)
				}
			},
		},
		{
			name: "the HTTP mode ends on a signal with the verdict on stdout", calls: []trace.Call{agentCall(1, "k1"), agentCall(2, "k1")}, cancel: true, code: ExitOK,
			args: []string{"proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9", "--http", "--key-header", "X-Key",
				"--redact-header", "X-Token", "--json", "-"},
			check: func(t *testing.T, s *proxy.Session, r ran, _ string) {
				if s.HTTP.Listen != "127.0.0.1:0" || s.HTTP.Upstream != "http://127.0.0.1:9" || !s.HTTP.Plain || s.Options.Key.Header != "X-Key" ||
					!slices.Equal(s.Options.RedactHeaders, []string{"X-Token"}) {
					t.Errorf("session %+v", s)
				}
				v := decodeReport[proxyJSON](t, "proxy", []byte(r.out))
				if v.Result != "pass" || v.Calls != 2 || v.Mutating != 2 {
					t.Errorf("verdict %+v", v)
				}
			},
		},
		{
			name: "a mutating call without a key exits 1", calls: []trace.Call{agentCall(1, "")}, code: ExitFailed,
			args: []string{"proxy", "--json", "{dir}/v.json", "--junit", "{dir}/v.xml", "--", "true"},
			check: func(t *testing.T, _ *proxy.Session, _ ran, dir string) {
				if v := readReport[proxyJSON](t, "proxy", filepath.Join(dir, "v.json")); v.Result != "fail" || v.Violations == 0 || len(v.Findings) == 0 || v.Findings[0].Check != "key-present" {
					t.Errorf("verdict %+v", v)
				}
				if _, err := os.Stat(filepath.Join(dir, "v.xml")); err != nil {
					t.Error(err)
				}
			},
		},
		{
			name: "--key-pattern reaches the verdict", calls: []trace.Call{agentCall(1, "k1")}, code: ExitFailed,
			args: []string{"proxy", "--key-pattern", "^[0-9a-f]{8}$", "--json", "{dir}/v.json", "--", "true"},
			check: func(t *testing.T, _ *proxy.Session, _ ran, dir string) {
				if v := readReport[proxyJSON](t, "proxy", filepath.Join(dir, "v.json")); v.Result != "fail" || len(v.Findings) == 0 || v.Findings[0].Check != "key-pattern" {
					t.Errorf("verdict %+v", v)
				}
			},
		},
		{
			name: "a session without a mutating call judges nothing", calls: []trace.Call{}, code: ExitOK,
			args: []string{"proxy", "--json", "{dir}/v.json", "--", "true"},
			check: func(t *testing.T, _ *proxy.Session, _ ran, dir string) {
				if v := readReport[proxyJSON](t, "proxy", filepath.Join(dir, "v.json")); v.Result != "nothing-judged" {
					t.Errorf("verdict %+v, want nothing judged", v)
				}
			},
		},
		{
			name: "a tool server that failed the agent exits 1", calls: []trace.Call{agentCall(1, "k1")}, code: ExitFailed,
			upstream: &proxy.UpstreamError{Command: "true", What: "exited while the agent was connected"},
			args:     []string{"proxy", "--json", "{dir}/v.json", "--", "true"},
			check: func(t *testing.T, _ *proxy.Session, _ ran, dir string) {
				if v := readReport[proxyJSON](t, "proxy", filepath.Join(dir, "v.json")); v.Error == "" || v.Result != "error" {
					t.Errorf("verdict %+v", v)
				}
			},
		},
		{
			name: "a proxy that could not run exits 1", calls: []trace.Call{}, err: errors.New("listen: address in use"), code: ExitFailed,
			stderr: "idemtest: listen: address in use", args: []string{"proxy", "--", "true"},
		},
		{name: "no server", args: []string{"proxy"}, code: ExitUsage, stderr: "no tool server: give its command after --"},
		{name: "a server that is not there", args: []string{"proxy", "--", "idemtest-no-such-server"}, code: ExitUsage, stderr: "server command: "},
		{name: "--fault-rate 2", args: []string{"proxy", "--fault-rate", "2", "--", "true"}, code: ExitUsage, stderr: "--fault-rate must be from 0 to 1"},
		{name: "--fault not KIND:TOOL#N", args: []string{"proxy", "--fault", "lose:issue_refund", "--", "true"}, code: ExitUsage, stderr: "lose:issue_refund"},
		{name: "--key-pattern not a regex", args: []string{"proxy", "--key-pattern", "(", "--", "true"}, code: ExitUsage, stderr: "--key-pattern: "},
		{name: "--listen without --upstream", args: []string{"proxy", "--listen", "127.0.0.1:0"}, code: ExitUsage, stderr: "HTTP modes need both --listen and --upstream"},
		{name: "--listen off loopback", args: []string{"proxy", "--listen", "0.0.0.0:7001", "--upstream", "http://127.0.0.1:9"}, code: ExitUsage, stderr: "--listen 0.0.0.0:7001: "},
		{name: "--json - over stdio", args: []string{"proxy", "--json", "-", "--", "true"}, code: ExitUsage, stderr: "standard output is the agent's MCP stream"},
		{name: "--hold over plain HTTP", args: []string{"proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9", "--http", "--hold", "1s"}, code: ExitUsage, stderr: "--hold is for MCP"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sessions := &calls[*proxy.Session]{}
			seams := forbidden(t)
			seams.RunProxy = func(_ context.Context, s *proxy.Session) (*agentverdict.Calls, *proxy.UpstreamError, error) {
				sessions.add(s)
				if tc.calls == nil {
					t.Error("the session ran")
				}
				if tc.cancel {
					cancel()
				}
				var kept agentverdict.Calls
				for _, c := range tc.calls {
					kept.Add(agentverdict.Digest(c, s.Options.IgnoreArgs))
				}
				return &kept, tc.upstream, tc.err
			}
			r := execute(ctx, seams, withDir(tc.args, dir)...)
			r.wantExit(t, tc.code, tc.stderr)
			if tc.check != nil {
				tc.check(t, sessions.one(t, "the session"), r, dir)
			}
		})
	}
}
