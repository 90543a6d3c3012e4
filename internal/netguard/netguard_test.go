package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestCheck(t *testing.T) {
	p := New([]string{"payments.internal", "db.internal:5432", "[2001:db8::1]"})
	for _, tc := range []struct {
		name, host, port string
		ok               bool
	}{
		{"localhost", "localhost", "80", true},
		{"localhost with a final dot", "localhost.", "", true},
		{"loopback v4", "127.0.0.1", "80", true},
		{"other loopback v4", "127.3.2.1", "", true},
		{"loopback v6", "::1", "", true},
		{"bracketed loopback v6", "[::1]", "", true},
		{"unspecified v4 reaches this machine but is not loopback", "0.0.0.0", "80", false},
		{"unspecified v6", "::", "80", false},
		{"allowed name", "payments.internal", "443", true},
		{"allowed name, any case", "PAYMENTS.internal", "443", true},
		{"allowed host and port", "db.internal", "5432", true},
		{"allowed host, other port", "db.internal", "5433", false},
		{"allowed v6", "2001:db8::1", "443", true},
		{"a name that merely starts like localhost", "localhost.evil.example", "80", false},
		{"other host", "example.com", "80", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Check(tc.host, tc.port)
			if (err == nil) != tc.ok {
				t.Errorf("Check(%q, %q) = %v, want ok=%v", tc.host, tc.port, err, tc.ok)
			}
		})
	}
	var nilPolicy *Policy
	if nilPolicy.Check("127.0.0.1", "") != nil || nilPolicy.Check("example.com", "") == nil {
		t.Error("a nil policy must allow loopback only")
	}
}

func TestLoopbackOnlyChecksTheResolvedAddress(t *testing.T) {
	if err := loopbackOnly("localhost", "127.0.0.1:80"); err != nil {
		t.Error(err)
	}
	err := loopbackOnly("localhost", "192.0.2.7:80")
	var he *HostError
	if !errors.As(err, &he) || he.IP != "192.0.2.7" || !strings.Contains(err.Error(), "localhost resolved to 192.0.2.7") {
		t.Errorf("a loopback name resolving elsewhere: %v", err)
	}
}

// counting is a loopback server that counts the connections it accepts.
func counting(t *testing.T) (addr string, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), conns
}

func TestDialContext(t *testing.T) {
	addr, conns := counting(t)
	_, port, _ := net.SplitHostPort(addr)
	ctx := context.Background()
	p := New(nil)
	for _, ok := range []string{addr, net.JoinHostPort("localhost", port)} {
		c, err := p.DialContext(ctx, "tcp", ok)
		if err != nil {
			t.Fatalf("dial %s: %v", ok, err)
		}
		c.Close()
	}
	// 0.0.0.0 reaches a loopback listener on Linux; the policy refuses it before connecting.
	for _, refused := range []string{net.JoinHostPort("0.0.0.0", port), net.JoinHostPort("refused.test", port)} {
		_, err := p.DialContext(ctx, "tcp", refused)
		var he *HostError
		if !errors.As(err, &he) || !Refused(err) {
			t.Errorf("dial %s: %v, want a HostError", refused, err)
		}
	}
	// Allowing the address by name lets it through.
	if c, err := New([]string{"0.0.0.0:" + port}).DialContext(ctx, "tcp", net.JoinHostPort("0.0.0.0", port)); err != nil {
		t.Errorf("allowed host:port: %v", err)
	} else {
		c.Close()
	}
	if n := conns.Load(); n > 3 {
		t.Errorf("listener accepted %d connections, want at most the 3 allowed", n)
	}
}

func TestClientNeverFollowsRedirects(t *testing.T) {
	var refusedHits atomic.Int64
	var auth atomic.Value
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refusedHits.Add(1)
		auth.Store(r.Header.Get("Authorization"))
	}))
	defer refused.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(refused.URL, "http://"))
	target := "http://0.0.0.0:" + port + "/mcp"
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	for _, allow := range [][]string{nil, {"0.0.0.0"}} {
		req, _ := http.NewRequest(http.MethodPost, redirecting.URL, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer secret")
		_, err := New(allow).Client(0).Do(req)
		var re *RedirectError
		if !errors.As(err, &re) || re.Location != target || re.Status != http.StatusTemporaryRedirect || !strings.Contains(err.Error(), target) {
			t.Errorf("allow %v: %v, want a RedirectError naming %s", allow, err, target)
		}
	}
	if n := refusedHits.Load(); n != 0 {
		t.Errorf("the redirect target received %d requests (Authorization %q)", n, auth.Load())
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:7001", true},
		{"localhost:0", true},
		{"[::1]:7001", true},
		{"0.0.0.0:7001", false},
		{"192.0.2.1:7001", false},
		{"127.0.0.1", false}, // no port
	} {
		if err := CheckListen(tc.addr); (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q) = %v, want ok=%v", tc.addr, err, tc.ok)
		}
	}
}
