package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/testenv"
)

func TestMain(m *testing.M) {
	// The MCP stdio test runs this test binary as the server.
	if os.Getenv("REFUNDSERVER_RUN_MAIN") == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func openTestStore(t *testing.T, name string) store {
	t.Helper()
	ctx := context.Background()
	var st store
	var err error
	switch name {
	case "memory":
		st = newMemStore()
	case "redis":
		addr := envOr("REDIS_ADDR", "127.0.0.1:6379")
		testenv.NeedService(t, "Redis", addr)
		st, err = newRedisStore(ctx, addr, randomID("refundserver-test:")+":")
	case "postgres":
		testenv.NeedService(t, "PostgreSQL", "127.0.0.1:5432")
		st, err = newPGStore(ctx, envOr("DATABASE_URL", "postgres://127.0.0.1:5432/test"))
	case "sqlite":
		st, err = newSQLiteStore(ctx, filepath.Join(t.TempDir(), "refunds.db"))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

type testServer struct {
	*httptest.Server
	st store
}

func startServer(t *testing.T, storeName string, cfg config) *testServer {
	t.Helper()
	if cfg.Mode == "" {
		cfg.Mode = modeLocked
	}
	if cfg.KeyTTL == 0 {
		cfg.KeyTTL = time.Hour
	}
	if cfg.Lease == 0 {
		cfg.Lease = 10 * time.Second
	}
	if cfg.DownstreamTimeout == 0 {
		cfg.DownstreamTimeout = 5 * time.Second
	}
	st := openTestStore(t, storeName)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(newService(cfg, st, log).handler())
	t.Cleanup(srv.Close)
	return &testServer{srv, st}
}

type callResult struct {
	status   int
	body     []byte
	replayed bool
	code     string
}

func (s *testServer) call(t *testing.T, tool, key string, args any) callResult {
	t.Helper()
	b, _ := json.Marshal(args)
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/tools/"+tool, bytes.NewReader(b))
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return callResult{}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &p)
	return callResult{resp.StatusCode, body, resp.Header.Get("Idempotent-Replayed") == "true", p.Code}
}

func (s *testServer) executions(t *testing.T, acct string) int {
	t.Helper()
	list, err := s.st.Refunds(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

// burst sends n copies of one call at once and returns their statuses.
func (s *testServer) burst(t *testing.T, n int, key string, args any) []int {
	var wg sync.WaitGroup
	start := make(chan struct{})
	statuses := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i] = s.call(t, "issue_refund", key, args).status
		}()
	}
	close(start)
	wg.Wait()
	return statuses
}

var stores = []string{"memory", "redis", "postgres", "sqlite"}

// TestCheckDelay: a delay before the key check moves the naive mode's window, it does not close
// it, and the locked mode stays exactly-once behind it; a negative delay is a usage error.
func TestCheckDelay(t *testing.T) {
	t.Run("locked executes a delayed burst once", func(t *testing.T) {
		s := startServer(t, "memory", config{CheckDelay: 5 * time.Millisecond})
		acct := randomID("acct_")
		s.burst(t, 16, randomID("k_"), map[string]any{"accountId": acct, "amount": 10})
		if n := s.executions(t, acct); n != 1 {
			t.Errorf("executions = %d, want 1", n)
		}
	})
	t.Run("naive double-executes a delayed burst", func(t *testing.T) {
		s := startServer(t, "memory", config{Mode: modeNaive, Work: 5 * time.Millisecond, CheckDelay: 5 * time.Millisecond})
		for try := 1; try <= 20; try++ {
			acct := randomID("acct_")
			s.burst(t, 32, randomID("k_"), map[string]any{"accountId": acct, "amount": 10})
			if s.executions(t, acct) > 1 {
				return
			}
		}
		t.Fatal("naive mode behind a check delay never double-executed in 20 bursts of 32")
	})
	t.Run("negative is a usage error", func(t *testing.T) {
		var stderr bytes.Buffer
		if code := run(context.Background(), []string{"--check-delay", "-1ms"}, nil, io.Discard, &stderr); code != 2 {
			t.Errorf("exit %d, want 2 (%s)", code, stderr.String())
		}
	})
}

func TestLockedExecutesOnce(t *testing.T) {
	for _, storeName := range stores {
		t.Run(storeName, func(t *testing.T) {
			s := startServer(t, storeName, config{Work: 5 * time.Millisecond})

			t.Run("sequential duplicate replays byte for byte", func(t *testing.T) {
				acct, key := randomID("acct_"), randomID("k_")
				args := map[string]any{"accountId": acct, "amount": 49.99}
				first := s.call(t, "issue_refund", key, args)
				second := s.call(t, "issue_refund", key, args)
				if first.status != 200 || second.status != 200 {
					t.Fatalf("statuses %d, %d; want 200, 200 (%s)", first.status, second.status, second.body)
				}
				if first.replayed || !second.replayed {
					t.Errorf("replayed = %v, %v; want false, true", first.replayed, second.replayed)
				}
				if !bytes.Equal(first.body, second.body) {
					t.Errorf("replay body differs:\n%s\n%s", first.body, second.body)
				}
				if n := s.executions(t, acct); n != 1 {
					t.Errorf("executions = %d, want 1", n)
				}
			})

			t.Run("32-way concurrent duplicate", func(t *testing.T) {
				acct, key := randomID("acct_"), randomID("k_")
				statuses := s.burst(t, 32, key, map[string]any{"accountId": acct, "amount": 10})
				if n := s.executions(t, acct); n != 1 {
					t.Errorf("executions = %d, want 1 (statuses %v)", n, statuses)
				}
				for _, st := range statuses {
					if st != 200 && st != 409 {
						t.Errorf("status %d in a burst; want 200 or 409", st)
					}
				}
			})

			t.Run("missing key is 400", func(t *testing.T) {
				acct := randomID("acct_")
				r := s.call(t, "issue_refund", "", map[string]any{"accountId": acct, "amount": 1})
				if r.status != 400 || r.code != "idempotency_key_missing" {
					t.Errorf("got %d %s, want 400 idempotency_key_missing", r.status, r.code)
				}
				if n := s.executions(t, acct); n != 0 {
					t.Errorf("executions = %d, want 0", n)
				}
			})

			t.Run("same key other payload is 422", func(t *testing.T) {
				acct, key := randomID("acct_"), randomID("k_")
				s.call(t, "issue_refund", key, map[string]any{"accountId": acct, "amount": 5})
				r := s.call(t, "issue_refund", key, map[string]any{"accountId": acct, "amount": 6})
				if r.status != 422 || r.replayed {
					t.Errorf("got %d replayed=%v, want 422 not replayed", r.status, r.replayed)
				}
				if n := s.executions(t, acct); n != 1 {
					t.Errorf("executions = %d, want 1", n)
				}
			})

			t.Run("quoted sf-string key is the same key", func(t *testing.T) {
				acct, key := randomID("acct_"), randomID("k_")
				args := map[string]any{"accountId": acct, "amount": 5}
				s.call(t, "issue_refund", key, args)
				r := s.call(t, "issue_refund", `"`+key+`"`, args)
				if !r.replayed {
					t.Errorf("quoted key was not replayed: %d %s", r.status, r.body)
				}
			})

			t.Run("keys are scoped per tool", func(t *testing.T) {
				key := randomID("k_")
				acct := randomID("acct_")
				s.call(t, "issue_refund", key, map[string]any{"accountId": acct, "amount": 5})
				r := s.call(t, "set_account_status", key, map[string]any{"accountId": acct, "status": "active"})
				if r.status != 200 {
					t.Errorf("set_account_status with a key used by issue_refund: %d %s", r.status, r.body)
				}
			})
		})
	}
}

func TestInFlightDuplicateIs409(t *testing.T) {
	for _, storeName := range stores {
		t.Run(storeName, func(t *testing.T) {
			// The payment processor holds the first refund until the duplicate has been
			// answered: the first is in flight, by construction rather than by a guessed delay.
			reached, release := make(chan struct{}, 1), make(chan struct{})
			pp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached <- struct{}{}
				<-release
				w.Write([]byte(`{"id":"pp_1"}`))
			}))
			defer pp.Close()
			defer close(release)
			s := startServer(t, storeName, config{Downstream: pp.URL})
			acct, key := randomID("acct_"), randomID("k_")
			args := map[string]any{"accountId": acct, "amount": 5}
			done := make(chan callResult)
			go func() { done <- s.call(t, "issue_refund", key, args) }()
			<-reached
			r := s.call(t, "issue_refund", key, args)
			release <- struct{}{}
			if r.status != 409 || r.code != "idempotency_key_in_progress" {
				t.Errorf("duplicate in flight: %d %s, want 409 idempotency_key_in_progress", r.status, r.body)
			}
			if first := <-done; first.status != 200 {
				t.Errorf("first: %d %s", first.status, first.body)
			}
		})
	}
}

func TestDownstreamFailureReleasesKey(t *testing.T) {
	for _, storeName := range stores {
		t.Run(storeName, func(t *testing.T) {
			var calls atomic.Int32
			var keys sync.Map
			pp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				keys.Store(r.Header.Get("Idempotency-Key"), true)
				if calls.Add(1) == 1 {
					http.Error(w, "processor down", http.StatusInternalServerError)
					return
				}
				w.Write([]byte(`{"id":"pp_1"}`))
			}))
			defer pp.Close()
			s := startServer(t, storeName, config{Downstream: pp.URL})
			acct, key := randomID("acct_"), randomID("k_")
			args := map[string]any{"accountId": acct, "amount": 5}
			if r := s.call(t, "issue_refund", key, args); r.status != 502 {
				t.Fatalf("first call with the processor down: %d %s, want 502", r.status, r.body)
			}
			if r := s.call(t, "issue_refund", key, args); r.status != 200 || r.replayed {
				t.Fatalf("retry after 502: %d replayed=%v %s, want a fresh 200", r.status, r.replayed, r.body)
			}
			if n := s.executions(t, acct); n != 1 {
				t.Errorf("executions = %d, want 1", n)
			}
			if _, ok := keys.Load(key); !ok {
				t.Errorf("the processor never saw idempotency key %q", key)
			}
		})
	}
}

func TestLeaseAndKeyExpiry(t *testing.T) {
	for _, storeName := range stores {
		t.Run(storeName, func(t *testing.T) {
			// The lease and the key lifetime are real durations, so the test waits them out;
			// a step that had to happen inside one of them and did not (a loaded machine) makes
			// the attempt inconclusive, and it is repeated with longer durations instead of
			// failing.
			for scale := time.Duration(1); ; scale *= 2 {
				if leaseAndExpiry(t, storeName, 200*time.Millisecond*scale, 600*time.Millisecond*scale) {
					return
				}
				if scale >= 16 {
					t.Fatal("every attempt missed its time window; the machine is too busy")
				}
				t.Logf("attempt with lease %v missed its time window; again with longer ones", 200*time.Millisecond*scale)
			}
		})
	}
}

// leaseAndExpiry checks a crashed reservation's lease and a key's lifetime; it returns false
// when a step that had to come before a deadline came after it.
func leaseAndExpiry(t *testing.T, storeName string, lease, ttl time.Duration) bool {
	s := startServer(t, storeName, config{Lease: lease, KeyTTL: ttl})
	acct, key := randomID("acct_"), randomID("k_")
	args := map[string]any{"accountId": acct, "amount": 5}

	// A request that reserved the key and crashed.
	fp := fingerprint(map[string]any{"accountId": acct, "amount": 5.0})
	reserved := time.Now()
	if _, err := s.st.Reserve(context.Background(), "issue_refund:"+key, record{Fingerprint: fp, Token: "crashed"}, lease); err != nil {
		t.Fatal(err)
	}
	leaseEnds := time.Now().Add(lease) // at the latest
	r := s.call(t, "issue_refund", key, args)
	if time.Since(reserved) >= lease {
		return false
	}
	if r.status != 409 {
		t.Fatalf("while the crashed reservation holds: %d %s, want 409", r.status, r.body)
	}
	time.Sleep(time.Until(leaseEnds.Add(lease / 4)))
	executed := time.Now()
	if r := s.call(t, "issue_refund", key, args); r.status != 200 || r.replayed {
		t.Fatalf("after the lease: %d %s, want a fresh 200", r.status, r.body)
	}
	r = s.call(t, "issue_refund", key, args)
	if time.Since(executed) >= ttl {
		return false
	}
	if !r.replayed {
		t.Fatalf("before the key expires: %d %s, want a replay", r.status, r.body)
	}
	time.Sleep(ttl + ttl/6) // the key was stored before the replay was answered
	if r := s.call(t, "issue_refund", key, args); r.status != 200 || r.replayed {
		t.Fatalf("after the key expired: %d %s, want a fresh execution", r.status, r.body)
	}
	if n := s.executions(t, acct); n != 2 {
		t.Errorf("executions = %d, want 2 (one per key lifetime)", n)
	}
	return true
}

func TestBrokenModes(t *testing.T) {
	for _, storeName := range stores {
		t.Run(storeName+"/naive double-executes under concurrency", func(t *testing.T) {
			s := startServer(t, storeName, config{Mode: modeNaive, Work: 5 * time.Millisecond})
			for try := 1; try <= 20; try++ {
				acct, key := randomID("acct_"), randomID("k_")
				s.burst(t, 32, key, map[string]any{"accountId": acct, "amount": 10})
				if n := s.executions(t, acct); n > 1 {
					t.Logf("caught %d executions on try %d", n, try)
					return
				}
			}
			t.Fatal("naive mode never double-executed in 20 bursts of 32")
		})
		t.Run(storeName+"/naive replays sequential duplicates", func(t *testing.T) {
			s := startServer(t, storeName, config{Mode: modeNaive})
			acct, key := randomID("acct_"), randomID("k_")
			args := map[string]any{"accountId": acct, "amount": 10}
			s.call(t, "issue_refund", key, args)
			if r := s.call(t, "issue_refund", key, args); !r.replayed {
				t.Errorf("naive sequential retry not replayed: %d %s", r.status, r.body)
			}
		})
		t.Run(storeName+"/none executes every call", func(t *testing.T) {
			s := startServer(t, storeName, config{Mode: modeNone})
			acct, key := randomID("acct_"), randomID("k_")
			args := map[string]any{"accountId": acct, "amount": 10}
			s.call(t, "issue_refund", key, args)
			s.call(t, "issue_refund", key, args)
			if n := s.executions(t, acct); n != 2 {
				t.Errorf("executions = %d, want 2", n)
			}
		})
	}
}

func TestHTTPEndpoints(t *testing.T) {
	s := startServer(t, "memory", config{})
	acct := randomID("acct_")
	s.call(t, "issue_refund", "k1", map[string]any{"accountId": acct, "amount": 3, "currency": "EUR"})
	resp, err := http.Get(s.URL + "/refunds?accountId=" + acct)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Refunds []refund }
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if len(out.Refunds) != 1 || out.Refunds[0].Currency != "EUR" {
		t.Errorf("GET /refunds = %+v", out)
	}
	for _, tc := range []struct {
		name, tool string
		args       any
		status     int
	}{
		{"unknown tool", "nope", map[string]any{}, 404},
		{"bad amount", "issue_refund", map[string]any{"accountId": "a", "amount": -1}, 400},
		{"not an object", "issue_refund", []int{1}, 400},
		{"status twice", "set_account_status", map[string]any{"accountId": "a", "status": "active"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := s.call(t, tc.tool, "k-"+tc.name, tc.args); r.status != tc.status {
				t.Errorf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
		})
	}
}

func TestParseKeyHeader(t *testing.T) {
	for in, want := range map[string]string{`abc`: "abc", `"abc"`: "abc", `"a\"b"`: `a"b`, ` x `: "x", `"`: `"`} {
		if got := parseKeyHeader(in); got != want {
			t.Errorf("parseKeyHeader(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	transports := map[string]func(t *testing.T) mcp.Transport{
		"stdio": func(t *testing.T) mcp.Transport {
			cmd := exec.Command(os.Args[0], "--stdio")
			cmd.Env = append(os.Environ(), "REFUNDSERVER_RUN_MAIN=1")
			cmd.Stderr = os.Stderr
			return &mcp.CommandTransport{Command: cmd}
		},
		"http": func(t *testing.T) mcp.Transport {
			s := startServer(t, "memory", config{})
			return &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp"}
		},
	}
	for name, newTransport := range transports {
		t.Run(name, func(t *testing.T) {
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, newTransport(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			hints := map[string]string{}
			for _, tool := range tools.Tools {
				hints[tool.Name] = fmt.Sprintf("ro=%v idem=%v", tool.Annotations.ReadOnlyHint, tool.Annotations.IdempotentHint)
			}
			want := map[string]string{"issue_refund": "ro=false idem=false", "list_refunds": "ro=true idem=false", "set_account_status": "ro=false idem=true"}
			for k, v := range want {
				if hints[k] != v {
					t.Errorf("%s annotations %q, want %q", k, hints[k], v)
				}
			}

			acct, key := randomID("acct_"), randomID("k_")
			call := func(args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
				t.Helper()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "issue_refund", Arguments: args, Meta: meta})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			first := call(map[string]any{"accountId": acct, "amount": 5, "idempotencyKey": key}, nil)
			second := call(map[string]any{"accountId": acct, "amount": 5}, mcp.Meta{"idempotencyKey": key})
			if first.IsError || second.IsError {
				t.Fatalf("errors: %v %v", first.Content, second.Content)
			}
			if first.Meta[replayedMeta] == true || second.Meta[replayedMeta] != true {
				t.Errorf("replayed meta: %v, %v", first.Meta, second.Meta)
			}
			a, _ := json.Marshal(first.StructuredContent)
			b, _ := json.Marshal(second.StructuredContent)
			if !bytes.Equal(a, b) {
				t.Errorf("replay differs: %s vs %s", a, b)
			}
			mismatch := call(map[string]any{"accountId": acct, "amount": 6, "idempotencyKey": key}, nil)
			if !mismatch.IsError || mismatch.StructuredContent.(map[string]any)["code"] != "idempotency_key_mismatch" {
				t.Errorf("reused key with another payload: %+v", mismatch.StructuredContent)
			}
			missing := call(map[string]any{"accountId": acct, "amount": 5}, nil)
			if !missing.IsError {
				t.Errorf("missing key accepted: %+v", missing.StructuredContent)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_refunds", Arguments: map[string]any{"accountId": acct}})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(res.StructuredContent.(map[string]any)["refunds"].([]any)); n != 1 {
				t.Errorf("list_refunds over MCP: %d refunds, want 1", n)
			}
		})
	}
}

// TestLogLevelFromEnv: LOG_LEVEL sets --log-level, as a service's env: in idemtest.yaml does.
func TestLogLevelFromEnv(t *testing.T) {
	t.Setenv("LOG_LEVEL", "chatty")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"--addr", "127.0.0.1:0"}, nil, io.Discard, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2 (LOG_LEVEL=chatty refused); stderr:\n%s", code, stderr.String())
	}
	if want := `--log-level "chatty"`; !bytes.Contains(stderr.Bytes(), []byte(want)) {
		t.Errorf("stderr lacks %s:\n%s", want, stderr.String())
	}
}

// A request whose client went away must leave the store as the store reported: a reservation
// that succeeded is kept, one reported as failed is not (a kept but unreported reservation
// would answer every retry 409 for the whole lease). Every store, with a context already ended.
func TestWritesAfterCancelAreReportedAsDone(t *testing.T) {
	for _, storeName := range stores {
		t.Run(storeName, func(t *testing.T) {
			st := openTestStore(t, storeName)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			key := randomID("cancelled:")
			prev, err := st.Reserve(ctx, key, record{Fingerprint: "fp", Token: "t1"}, time.Minute)
			if err != nil || prev != nil {
				t.Fatalf("Reserve with an ended context = %v, %v; want the key reserved", prev, err)
			}
			got, err := st.Get(context.Background(), key)
			if err != nil || got == nil || got.Token != "t1" || got.Done {
				t.Fatalf("after Reserve: %+v, %v; want the in-flight record of t1", got, err)
			}
			if err := st.Complete(ctx, key, record{Fingerprint: "fp", Token: "t1", Done: true, Status: 200, Body: []byte(`{}`)}, time.Minute); err != nil {
				t.Fatalf("Complete with an ended context: %v", err)
			}
			got, err = st.Get(context.Background(), key)
			if err != nil || got == nil || !got.Done || got.Status != 200 || string(got.Body) != `{}` {
				t.Fatalf("after Complete: %+v, %v; want the stored answer", got, err)
			}
			r := refund{RefundID: randomID("rf_"), AccountID: randomID("acct_"), Amount: 1, Currency: "EUR", Status: "succeeded", Key: key, CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
			if err := st.AddRefund(ctx, r); err != nil {
				t.Fatalf("AddRefund with an ended context: %v", err)
			}
			list, err := st.Refunds(context.Background(), r.AccountID)
			if err != nil || len(list) != 1 || list[0].RefundID != r.RefundID || !list[0].CreatedAt.Equal(r.CreatedAt) {
				t.Fatalf("Refunds = %+v, %v; want the one refund written", list, err)
			}
		})
	}
}
