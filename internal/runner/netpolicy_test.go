package runner

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/result"
)

// refusedTarget is a loopback listener addressed as 0.0.0.0: Linux connects that address to
// this machine's listeners, but it is not loopback, so the outbound policy must refuse it.
// It counts every connection it accepts.
func refusedTarget(t *testing.T) (hostport string, conns *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = &atomic.Int32{}
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { ln.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	hostport = "0.0.0.0:" + port
	if c, err := net.Dial("tcp", hostport); err != nil {
		t.Skipf("0.0.0.0 does not reach loopback listeners here: %v", err)
	} else {
		c.Close()
	}
	// The reachability check's own connection is not counted below.
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("the reachability check was never accepted")
	}
	conns.Store(0)
	return hostport, conns
}

func TestTemplatedHostsAreRefusedBeforeTheFirstCall(t *testing.T) {
	srv := newEchoServer(t)
	t.Setenv("ECHO_URL", srv.URL)
	refused, conns := refusedTarget(t)
	host, port, _ := net.SplitHostPort(refused)
	t.Setenv("R_PORT", port)
	for _, tc := range []struct{ name, defs, want string }{
		{"http endpoint", `endpoints:
  far: {http: {url: "http://{{ env_host }}:${R_PORT}/tools/{tool}"}}`, "endpoint far: host 0.0.0.0 is not loopback"},
		{"mcp endpoint", `endpoints:
  far: {mcp: {url: "http://{{ env_host }}:${R_PORT}/mcp"}}`, "endpoint far: host 0.0.0.0 is not loopback"},
		{"http probe", `probes:
  p: {http: {url: "http://{{ env_host }}:${R_PORT}/"}}`, "probe p: host 0.0.0.0 is not loopback"},
		{"sql probe", `probes:
  p: {sql: {dsn: "postgres://u:secret@{{ env_host }}:${R_PORT}/test", query: "select 1"}}`, "probe p: host 0.0.0.0 is not loopback"},
		{"redis probe", `probes:
  p: {redis: {addr: "{{ env_host }}:${R_PORT}", command: [GET, k]}}`, "probe p: host 0.0.0.0 is not loopback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint := "local"
			if strings.Contains(tc.defs, "far:") {
				endpoint = "far"
			}
			yaml := `
name: templated host
endpoints:
  local: {http: {url: "${ECHO_URL}/tools/{tool}"}}
` + strings.Replace(tc.defs, "endpoints:\n", "", 1) + `
steps:
  - {call_tool: issue_refund, endpoint: ` + endpoint + `}
  - assert: "true"
`
			// A template the loader cannot resolve: the host is known only at run time.
			yaml = strings.ReplaceAll(yaml, "{{ env_host }}", "{{ '"+host+"' }}")
			rep := Run(context.Background(), load(t, yaml), Options{})
			r := rep.Scenarios[0]
			if r.Status != result.Errored || r.Failure == nil || !strings.Contains(r.Failure.Message, tc.want) {
				t.Fatalf("status %s failure %+v, want an error containing %q", r.Status, r.Failure, tc.want)
			}
			if n := r.Metrics.Calls; n != 0 {
				t.Errorf("%d calls were made before the refusal", n)
			}
		})
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the refused listener accepted %d connections", n)
	}
}

func TestKeysWithControlCharactersAreRefusedOnEveryPath(t *testing.T) {
	srv := newEchoServer(t)
	t.Setenv("ECHO_URL", srv.URL)
	for _, fanout := range []string{"", "fanout: 4"} {
		rep := Run(context.Background(), load(t, `
name: hostile key
endpoints:
  e: {http: {url: "${ECHO_URL}/tools/{tool}"}}
steps:
  - id: one
    call_tool: issue_refund
    key: "{{ \"ok-\" + \"\\u001b[31m\" }}"
    `+fanout+`
`), Options{})
		r := rep.Scenarios[0]
		if r.Status != result.Errored || r.Failure == nil || !strings.Contains(r.Failure.Message, "control character") {
			t.Errorf("%q: status %s failure %+v", fanout, r.Status, r.Failure)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.keys) != 0 {
		t.Errorf("the server received %d requests with a hostile key", len(srv.keys))
	}
}
