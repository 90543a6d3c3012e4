package battery

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/check/rig/rigtest"
	"github.com/idemtest/idemtest/internal/toolset"
)

// ledger is how ledgerServer keeps its keys: the zero value is a correct server (keys scoped per
// tool and stored with their payload, a call in flight marked so that a second one gets 409, a
// call without a key refused with 400, another payload under a used key with 422); each field
// breaks it in the one way a check is about.
type ledger struct {
	// work is how long a call of pay or ship works before it executes: a call in flight stays
	// in flight that long, whatever the machine's load.
	work time.Duration
	// naive checks the key, works, then executes and stores: a call that comes while another
	// with its key works executes too.
	naive bool
	// ignoreKeys executes every call, keyed or not, and never replays.
	ignoreKeys bool
	// conflictForever answers 409 to every retry of a completed key, never the stored answer.
	conflictForever bool
	// sharedKeys keeps one key space for every tool: ship with pay's key gets pay's answer.
	sharedKeys bool
	// dedupePayload replays a payload seen before, whatever its key.
	dedupePayload bool
	// ttl forgets a key after this long (0: never).
	ttl time.Duration
	// missingStatus and mismatchStatus replace 400 (no key) and 422 (another payload).
	missingStatus, mismatchStatus int
	// acceptMissing executes a call without a key; commitMissing executes it, then answers 400.
	acceptMissing, commitMissing bool
	// executeAgain executes a call of a completed key with the same payload again, unmarked
	// (another payload is still refused).
	executeAgain bool
	// lockReplay is middleware that holds a lock on a key while its call works: a call that
	// comes meanwhile waits for it and gets its answer, and every later call the stored answer,
	// never marked as a replay.
	lockReplay bool
	// update makes pay an UPDATE of the account's one entry (its id is the account's) instead of
	// an insert: a second execution leaves the state as one does. Its answer carries the
	// entry's version, which each execution raises, unless bare.
	update bool
	// bare answers an execution with {"done": true}: no id, the same every time.
	bare bool
	// markAgain executes a retry of a completed key again, then answers the stored answer
	// marked as a replay (a store consulted after the handler ran).
	markAgain bool
	// hookEvery posts to the sink hook on every hookEvery-th execution (1st, 3rd, … for 2): 2
	// is a webhook that batches, so the second execution's request has not gone out yet. hook
	// is the sink's URL, set once the sink is started.
	hookEvery int
	hook      *atomic.Pointer[string]
	// cacheErrors stores the refusal of a call without its accountId under its key, so that the
	// corrected call gets it again.
	cacheErrors bool
}

// ledgerServer is a plain HTTP JSON API run as l says: POST /tools/pay and /tools/ship (key in
// the Idempotency-Key header, a replay marked Idempotent-Replayed: true) append an entry with an
// id to the ledger (a call without accountId is refused with 400), and POST /tools/list_payments
// reads the state: the ledger's entries of one accountId (all without one).
func ledgerServer(t *testing.T, l ledger) string {
	var mu sync.Mutex
	type stored struct {
		payload string
		body    map[string]any
		at      time.Time
		// done is false while the call that took the key works; status is that of a stored
		// refusal (0: the body is an execution's answer).
		done   bool
		status int
		// ready is closed when the call that took the key completes it.
		ready chan struct{}
	}
	keys := map[string]*stored{}
	byPayload := map[string]map[string]any{}
	// entries are the state; executed is every execution, as GET /payments (the effects'
	// probe) lists them.
	var entries, executed []map[string]any
	versions := map[string]int{}
	hooked := 0
	raw2 := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	execute := func(tool string, args map[string]any) map[string]any {
		entry := map[string]any{"id": fmt.Sprintf("%s_%d", tool, len(executed)+1), "tool": tool}
		for k, v := range args {
			entry[k] = v
		}
		executed = append(executed, entry)
		answer := entry
		if l.update && tool == "pay" {
			id := fmt.Sprintf("pay_%v", args["accountId"])
			entry = map[string]any{"id": id, "tool": tool}
			for k, v := range args {
				entry[k] = v
			}
			entries = slices.DeleteFunc(entries, func(e map[string]any) bool { return e["id"] == id })
			versions[id]++
			answer = map[string]any{"version": versions[id]}
			if l.bare {
				answer = map[string]any{}
			}
			for k, v := range entry {
				answer[k] = v
			}
		}
		entries = append(entries, entry)
		if l.bare && !l.update {
			return map[string]any{"done": true}
		}
		return answer
	}
	reply := func(w http.ResponseWriter, status int, body map[string]any, replayed bool) {
		w.Header().Set("Content-Type", "application/json")
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /payments", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		out := []any{}
		for _, e := range executed {
			if e["accountId"] == r.URL.Query().Get("accountId") {
				out = append(out, e)
			}
		}
		reply(w, 200, map[string]any{"payments": out}, false)
	})
	mux.HandleFunc("POST /tools/list_payments", func(w http.ResponseWriter, r *http.Request) {
		var args struct {
			AccountID string `json:"accountId"`
		}
		_ = json.NewDecoder(r.Body).Decode(&args)
		mu.Lock()
		defer mu.Unlock()
		out := []any{}
		for _, e := range entries {
			if args.AccountID == "" || e["accountId"] == args.AccountID {
				out = append(out, e)
			}
		}
		reply(w, 200, map[string]any{"payments": out}, false)
	})
	mux.HandleFunc("POST /tools/{tool}", func(w http.ResponseWriter, r *http.Request) {
		tool := r.PathValue("tool")
		var args map[string]any
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
			reply(w, 400, map[string]any{"error": err.Error()}, false)
			return
		}
		raw, _ := json.Marshal(args)
		payload := tool + " " + string(raw)
		key := r.Header.Get("Idempotency-Key")
		scoped := tool + ":" + key
		if l.sharedKeys {
			scoped = key
		}
		mu.Lock()
		switch {
		case l.ignoreKeys:
		case key == "" && (l.acceptMissing || l.commitMissing):
			body := execute(tool, args)
			mu.Unlock()
			if l.commitMissing {
				reply(w, 400, map[string]any{"error": "an Idempotency-Key header is required"}, false)
				return
			}
			reply(w, 200, body, false)
			return
		case key == "":
			mu.Unlock()
			reply(w, cmp.Or(l.missingStatus, 400), map[string]any{"error": "an Idempotency-Key header is required"}, false)
			return
		case l.dedupePayload && byPayload[payload] != nil:
			body := byPayload[payload]
			mu.Unlock()
			reply(w, 200, body, true)
			return
		}
		if s := keys[scoped]; s != nil && !l.ignoreKeys && (l.ttl == 0 || time.Since(s.at) < l.ttl) {
			// A copy: the call that took the key completes it under the lock.
			if l.lockReplay && !s.done && s.ready != nil {
				ready := s.ready
				mu.Unlock()
				<-ready
				mu.Lock()
			}
			s := *s
			mu.Unlock()
			switch {
			case s.status != 0:
				reply(w, s.status, s.body, false)
			case !s.done:
				reply(w, 409, map[string]any{"error": "a request with this key is in progress"}, false)
			case s.payload != payload && !l.sharedKeys:
				reply(w, cmp.Or(l.mismatchStatus, 422), map[string]any{"error": "the key was used with another payload"}, false)
			case l.conflictForever:
				reply(w, 409, map[string]any{"error": "a request with this key is in progress"}, false)
			case l.executeAgain:
				mu.Lock()
				body := execute(tool, args)
				mu.Unlock()
				reply(w, 200, body, false)
			case l.markAgain:
				mu.Lock()
				execute(tool, args)
				mu.Unlock()
				reply(w, 200, s.body, true)
			default:
				reply(w, 200, s.body, !l.lockReplay)
			}
			return
		}
		if _, ok := args["accountId"]; !ok {
			refusal := map[string]any{"error": "accountId is required"}
			if l.cacheErrors {
				keys[scoped] = &stored{payload: payload, body: refusal, at: time.Now(), done: true, status: 400}
			}
			mu.Unlock()
			reply(w, 400, refusal, false)
			return
		}
		s := &stored{payload: payload, at: time.Now(), ready: make(chan struct{})}
		if !l.naive && !l.ignoreKeys {
			keys[scoped] = s
		}
		mu.Unlock()
		time.Sleep(l.work)
		mu.Lock()
		s.body, s.done, s.at = execute(tool, args), true, time.Now()
		if !l.ignoreKeys {
			keys[scoped] = s
			byPayload[payload] = s.body
		}
		close(s.ready)
		hooked++
		flush := l.hookEvery > 0 && (hooked-1)%l.hookEvery == 0
		mu.Unlock()
		if hook := l.hook; flush && hook != nil && hook.Load() != nil {
			if resp, err := http.Post(*hook.Load()+"/v1/hook", "application/json", strings.NewReader(raw2(args))); err == nil {
				resp.Body.Close()
			}
		}
		reply(w, 200, s.body, false)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL
}

// ledgerConfigWith is the idemtest.yaml of a ledgerServer at url: endpoint plain, whose mutating
// tools are pay and ship (ship is natural when asked), keys to be kept 200ms (expiry), and the
// evidence that counts pay's executions: the ledger of the session's account as the state ("" or
// "state"; a call given up on in an earlier trial that executes late is not this trial's), pay's
// declared effects over a probe of GET /payments (every execution) instead ("effects"), both
// ("both"), the sink hook (batchHook posts to it: "sink"), or nothing ("none").
func ledgerConfigWith(missingKey string, natural bool, evidence string) string {
	nat := ""
	if natural {
		nat = "\n    natural: [ship]"
	}
	snapshot, effects, probes := `
  snapshot: [{tool: list_payments, args: {accountId: "acct_{{ session }}"}}]`, "", ""
	switch evidence {
	case "effects", "both":
		if evidence == "effects" {
			snapshot = ""
		}
		effects = ", effects: len(paid.payments)"
		probes = `
probes:
  paid: {http: {url: "%[1]s/payments?accountId=acct_{{ session }}"}}`
	case "none":
		snapshot = ""
	case "sink":
		snapshot = ""
		probes = `
sinks:
  hook:
    routes:
      hook: {method: POST, path: /v1/hook, respond: {status: 200, json: {}}}`
	}
	return `endpoints:
  plain:
    http: {url: "%[1]s/tools/{tool}"}
    mutating: [pay, ship]` + nat + probes + `
check:
  missing_key: ` + missingKey + `
  key_ttl: 200ms` + snapshot + `
  tools:
    pay: {args: {accountId: "acct_{{ session }}", amount: 5}` + effects + `}
    ship: {args: {accountId: "acct_{{ session }}", address: "1 Main St"}}
`
}

// cellRun is one cell decided against a fresh ledgerServer.
type cellRun struct {
	server  ledger
	profile string
	check   string
	// tool is the tool checked (pay when empty); missingKey the check.missing_key policy
	// (reject when empty); natural makes ship idempotent by nature.
	tool       string
	missingKey string
	natural    bool
	// evidence is what counts pay's executions (ledgerConfigWith): the state when empty.
	evidence string
	// opts bound the concurrent and in-flight checks (one round, one trial when zero).
	opts rig.Options
}

// decide starts a ledgerServer as r says, prepares the battery for the tool as check.Run does
// and decides the one cell.
func (r cellRun) decide(t *testing.T) *Cell {
	t.Helper()
	b, tool, args := r.battery(t)
	return b.Cell(r.check, tool, args)
}

// battery starts a ledgerServer as r says and prepares a battery for the tool as check.Run
// does: the cells of several checks, decided in matrix order, see what the earlier showed.
func (r cellRun) battery(t *testing.T) (*Battery, toolset.ToolInfo, map[string]any) {
	t.Helper()
	if r.server.hookEvery > 0 {
		r.server.hook = &atomic.Pointer[string]{}
	}
	url := ledgerServer(t, r.server)
	policy := r.missingKey
	if policy == "" {
		policy = "reject"
	}
	base := rigtest.Config(t, fmt.Sprintf(ledgerConfigWith(policy, r.natural, r.evidence), url))
	prof, err := ProfileOf(r.profile)
	if err != nil {
		t.Fatal(err)
	}
	opts := r.opts
	if r.check != "" {
		opts.Only = []string{r.check}
	}
	if opts.Fanout == 0 {
		opts.Fanout = 8
	}
	if opts.Budget == 0 {
		opts.Budget = time.Millisecond
	}
	if opts.Rounds == 0 {
		opts.Rounds = 1
	}
	target := rigtest.Target(t, base, "plain")
	if r.server.hook != nil {
		u := target.Env.SinkURLs(base)["hook"]
		r.server.hook.Store(&u)
	}
	b := New(context.Background(), target, opts, prof)
	name := r.tool
	if name == "" {
		name = "pay"
	}
	var tool toolset.ToolInfo
	for _, ti := range target.Tools {
		if ti.Name == name {
			tool = ti
		}
	}
	if tool.Name == "" {
		t.Fatalf("no tool %s in %v", name, target.Tools)
	}
	args, why := b.Prepare(tool)
	if why != "" {
		t.Fatalf("%s was skipped: %s", name, why)
	}
	return b, tool, args
}
