package check

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/check/battery"
	"github.com/idemtest/idemtest/internal/check/rig/rigtest"
)

// keyStore is how storeServer keeps keys: per process (each instance its own), shared (one
// store every instance reads, as Redis is), or not at all; refuse answers 409 to every call of
// a completed key instead of the stored answer.
type keyStore struct {
	shared, ignore, refuse bool
}

// storeServer starts two instances of an HTTP tool server (POST /tools/pay appends a payment,
// marked Idempotent-Replayed on a replay; a call of a key still working gets 409) keeping their
// keys as ks says, and returns their URLs.
func storeServer(t *testing.T, ks keyStore) [2]string {
	type stored struct {
		body map[string]any
		done bool
	}
	newStore := func() (*sync.Mutex, map[string]*stored) { return &sync.Mutex{}, map[string]*stored{} }
	var ledgerMu sync.Mutex
	seq := 0
	handler := func(mu *sync.Mutex, keys map[string]*stored) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var args map[string]any
			_ = json.NewDecoder(r.Body).Decode(&args)
			key := r.Header.Get("Idempotency-Key")
			reply := func(status int, body map[string]any, replayed bool) {
				w.Header().Set("Content-Type", "application/json")
				if replayed {
					w.Header().Set("Idempotent-Replayed", "true")
				}
				w.WriteHeader(status)
				_ = json.NewEncoder(w).Encode(body)
			}
			mu.Lock()
			if s := keys[key]; s != nil && key != "" && !ks.ignore {
				done, body := s.done, s.body
				mu.Unlock()
				switch {
				case !done || ks.refuse:
					reply(409, map[string]any{"error": "a request with this key is in progress"}, false)
				default:
					reply(200, body, true)
				}
				return
			}
			s := &stored{}
			keys[key] = s
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
			ledgerMu.Lock()
			seq++
			body := map[string]any{"id": fmt.Sprintf("pay_%d", seq), "accountId": args["accountId"]}
			ledgerMu.Unlock()
			mu.Lock()
			s.body, s.done = body, true
			mu.Unlock()
			reply(200, body, false)
		})
	}
	var urls [2]string
	mu, keys := newStore()
	for i := range urls {
		if !ks.shared {
			mu, keys = newStore()
		}
		ts := httptest.NewServer(handler(mu, keys))
		t.Cleanup(ts.Close)
		urls[i] = ts.URL
	}
	return urls
}

// TestDiagnosisNamesWhatWasSeen: the whole-server diagnosis of two instances says "a per-process
// store" only where calls of one key executed on both instances while the copies that reached one
// instance were deduplicated there; instances sharing a store that refuses every retry keep their
// keys; instances that ignore keys get no claim of a per-process store.
func TestDiagnosisNamesWhatWasSeen(t *testing.T) {
	tests := []struct {
		name string
		ks   keyStore
		// want is the start of the one diagnosis, "" for none; not a text no diagnosis may
		// contain.
		want, not string
	}{
		{"a store per process", keyStore{}, "no tool replayed anything across 2 instances: calls of one key executed on two instances (pay ", ""},
		{"a shared store", keyStore{shared: true}, "", "per-process"},
		{"a shared store refusing every retry", keyStore{shared: true, refuse: true}, "no tool replayed anything: every retry was refused, so keys are kept", "per-process"},
		{"keys ignored", keyStore{ignore: true}, "no tool replayed anything across 2 instances: retries with the same key executed again", "per-process"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			urls := storeServer(t, tt.ks)
			base := rigtest.Config(t, fmt.Sprintf(`endpoints:
  two:
    http: {urls: ["%s/tools/{tool}", "%s/tools/{tool}"]}
    mutating: [pay]
check:
  tools:
    pay: {args: {accountId: "acct_{{ session }}"}}
`, urls[0], urls[1]))
			rep, err := Run(context.Background(), base, Options{Endpoint: "two", Only: []string{battery.Replay, battery.LostResponse, battery.Concurrent}, Fanout: 8, Budget: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var cells []string
			for _, row := range rep.Rows {
				for _, c := range row.Cells {
					cells = append(cells, fmt.Sprintf("%s %s %s", c.Check, c.Status.Symbol(), c.Reason))
				}
			}
			got := strings.Join(rep.Diagnoses, "\n")
			if (tt.want == "" && got != "") || !strings.HasPrefix(got, tt.want) || (tt.not != "" && strings.Contains(got, tt.not)) {
				t.Errorf("diagnoses %q\nwant %q, never %q\ncells:\n%s", got, tt.want, tt.not, strings.Join(cells, "\n"))
			}
		})
	}
}
