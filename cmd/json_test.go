package cmd

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/reportschema/schemacheck"
)

// syncBuffer is a stderr that a test reads while the command writes to it.
type syncBuffer struct {
	mu    sync.Mutex
	b     strings.Builder
	ready chan string // the proxy's address, once it listens
}

var listeningOn = regexp.MustCompile(`listening on (http://[^ ]+)`)

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
	if m := listeningOn.FindStringSubmatch(s.b.String()); m != nil && s.ready != nil {
		s.ready <- m[1]
		s.ready = nil
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestProxyHTTPJSONToStdout: in the HTTP modes standard output is free, so proxy --json - writes
// the verdict there, alone and valid against its schema; the human verdict stays on stderr.
func TestProxyHTTPJSONToStdout(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"refundId": "re_1", "key": r.Header.Get("Idempotency-Key")})
	}))
	defer upstream.Close()
	io, out, _ := iostreams.Test()
	addr := make(chan string, 1)
	errOut := &syncBuffer{ready: addr}
	io.ErrOut = errOut
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan ExitCode, 1)
	go func() {
		code <- Execute(ctx, &Factory{IO: io, Version: "test"}, []string{"proxy", "--http", "--listen", "127.0.0.1:0", "--upstream", upstream.URL, "--json", "-"})
	}()
	var proxyURL string
	select {
	case proxyURL = <-addr:
	case c := <-code:
		t.Fatalf("proxy exited %d before listening:\n%s", c, errOut)
	case <-time.After(time.Minute):
		t.Fatalf("proxy did not listen:\n%s", errOut)
	}
	req, _ := http.NewRequest(http.MethodPost, proxyURL+"/tools/issue_refund", strings.NewReader(`{"amount":1}`))
	req.Header.Set("Idempotency-Key", "k1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel() // the agent is done: what SIGTERM does
	if c := <-code; c != ExitOK {
		t.Fatalf("proxy exited %d:\n%s", c, errOut)
	}
	if err := schemacheck.Validate("proxy", out.Bytes()); err != nil {
		t.Fatalf("stdout: %v\n%s", err, out)
	}
	var v struct {
		Result string
		Calls  int
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v.Result != "pass" || v.Calls != 1 {
		t.Errorf("verdict %+v (%v), want pass over 1 call", v, err)
	}
	if !strings.Contains(errOut.String(), "PASS") {
		t.Errorf("stderr lacks the human verdict:\n%s", errOut)
	}
}
