package endpointtest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// RefusedListener is a loopback server that the policy must never let idemtest reach: it is
// addressed as 0.0.0.0, which Linux connects to this machine's listeners but which is not a
// loopback address. It counts what arrives.
type RefusedListener struct {
	requests atomic.Int32
	mu       sync.Mutex
	auth     []string
	// URL is the refused address of the listener.
	URL string
}

// NewRefusedListener starts a RefusedListener, or skips the test where 0.0.0.0 does not reach
// loopback listeners.
func NewRefusedListener(t *testing.T) *RefusedListener {
	t.Helper()
	l := &RefusedListener{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.requests.Add(1)
		l.mu.Lock()
		l.auth = append(l.auth, r.Header.Get("Authorization"))
		l.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	l.URL = "http://0.0.0.0:" + port + "/mcp"
	// Without the policy the refused address does reach the listener: the test means something.
	resp, err := http.Get(l.URL)
	if err != nil {
		t.Skipf("0.0.0.0 does not reach loopback listeners here: %v", err)
	}
	resp.Body.Close()
	l.requests.Store(0)
	l.auth = nil
	return l
}

// Check fails the test if anything reached the listener.
func (l *RefusedListener) Check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.requests.Load(); n != 0 {
		t.Errorf("the refused listener received %d requests (Authorization headers %q)", n, l.auth)
	}
}
