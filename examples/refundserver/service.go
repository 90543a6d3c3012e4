package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Idempotency modes. Only "locked" is correct; the others exist so idemtest can show what it
// catches.
const (
	modeLocked = "locked"
	modeNaive  = "naive"
	modeNone   = "none"
	// modeRefuse is locked, but a retry after completion is refused with 409 "duplicate
	// request" instead of answered with the stored result: safe, yet the agent never learns the
	// outcome (✗ under check's ietf and stripe profiles, ⚠ under lenient).
	modeRefuse = "refuse"
)

// uuidKey is what --key-format uuid accepts.
var uuidKey = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// keyArg is the argument (and MCP _meta entry) that carries the idempotency key over MCP.
const keyArg = "idempotencyKey"

type config struct {
	Mode       string
	KeyTTL     time.Duration
	Lease      time.Duration
	Work       time.Duration
	Downstream string // base URL of the payment processor; empty: none
	// DownstreamTimeout bounds a call to the payment processor.
	DownstreamTimeout time.Duration
	// Charges serves create_charge and lets issue_refund name the charge it refunds (chargeId).
	Charges bool
	// UUIDKeys refuses a key that is not a 36-character UUID, as libraries that parse keys do:
	// 500 and a warning in the log (a check needs check.key: {format: uuid}).
	UUIDKeys bool
	// TraceChecks, when set, receives a line "check KEY UNIXNANO" each time a key is checked,
	// for measuring how far apart duplicates reach the check (the benchmark uses it).
	TraceChecks io.Writer
	// ShapedRefusals answers every refusal (a 4xx) as a success whose body says error:
	// HTTP 200 or MCP isError false, with {"status":"error","code":…,"message":…}, as many
	// servers do. idemtest must read it as the refusal it is.
	ShapedRefusals bool
	// CheckDelay is how long a keyed request waits after it arrives before its key is checked
	// (slow authentication or validation in front of the store): the check-then-act window of
	// the naive mode then opens this late, which is what a retry after a client timeout must
	// land in (the benchmark's timeout-retry runs use it).
	CheckDelay time.Duration
}

// service implements the tools once for both transports.
type service struct {
	cfg    config
	store  store
	log    *slog.Logger
	client *http.Client
	// tracer records the spans of --otel-file and --otel-endpoint (a no-op without them).
	tracer trace.Tracer

	mu       sync.Mutex
	accounts map[string]string
	stats    stats
}

// stats are the server's own counts of keyed calls of mutating tools, served at GET /stats: the
// truth an audit of the server's telemetry is compared with.
type stats struct {
	Keyed      int `json:"keyed"`
	Executions int `json:"executions"`
	Replays    int `json:"replays"`
	Conflicts  int `json:"conflicts"`
}

// response is a tool's answer in HTTP terms; the MCP layer maps it onto a CallToolResult.
type response struct {
	Status   int
	Body     []byte
	Replayed bool
}

func (r response) ok() bool { return r.Status >= 200 && r.Status < 300 }

// shaped is the answer as a server with error-shaped refusals sends it: a refusal (4xx) becomes
// a 200 whose body says error, with the problem's code and detail; anything else is unchanged.
func (r response) shaped() response {
	if r.Status < 400 || r.Status >= 500 {
		return r
	}
	var p map[string]any
	_ = json.Unmarshal(r.Body, &p)
	msg, _ := p["detail"].(string)
	if msg == "" {
		msg, _ = p["error"].(string)
	}
	body, _ := json.Marshal(map[string]any{"status": "error", "code": p["code"], "message": msg})
	return response{Status: http.StatusOK, Body: body}
}

func newService(cfg config, st store, log *slog.Logger) *service {
	return &service{
		cfg:      cfg,
		store:    st,
		log:      log,
		client:   &http.Client{Timeout: cfg.DownstreamTimeout},
		accounts: map[string]string{},
		tracer:   noop.NewTracerProvider().Tracer(""),
	}
}

// count adds a keyed call of a mutating tool to the statistics.
func (s *service) count(resp response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Keyed++
	switch {
	case resp.Replayed:
		s.stats.Replays++
	case resp.Status == http.StatusConflict && bytes.Contains(resp.Body, []byte("idempotency_key_in_progress")):
		s.stats.Conflicts++
	}
}

func problem(status int, code, detail string) response {
	body, _ := json.Marshal(map[string]any{
		"type":   "urn:refundserver:problem:" + code,
		"title":  http.StatusText(status),
		"status": status,
		"code":   code,
		"detail": detail,
	})
	return response{Status: status, Body: body}
}

func jsonResponse(v any) response {
	body, err := json.Marshal(v)
	if err != nil {
		return problem(http.StatusInternalServerError, "internal", err.Error())
	}
	return response{Status: http.StatusOK, Body: body}
}

// call runs one tool. key is the idempotency key ("" when the caller sent none); args is the JSON
// object of arguments, which may itself carry the key as idempotencyKey.
func (s *service) call(ctx context.Context, tool, key string, args []byte) response {
	var m map[string]any
	if len(bytes.TrimSpace(args)) == 0 {
		m = map[string]any{}
	} else if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return problem(http.StatusBadRequest, "invalid_arguments", "arguments must be a JSON object")
	}
	if k, ok := m[keyArg].(string); ok {
		if key == "" {
			key = k
		}
		delete(m, keyArg)
	}
	switch tool {
	case "issue_refund":
		return s.issueRefund(ctx, key, m)
	case "list_refunds":
		acct, _ := m["accountId"].(string)
		list, err := s.store.Refunds(ctx, acct)
		if err != nil {
			return problem(http.StatusInternalServerError, "store_error", err.Error())
		}
		return jsonResponse(map[string]any{"refunds": list})
	case "set_account_status":
		// Idempotent by nature, it has no key store; each call executes.
		_, span := s.executeSpan(ctx, spanAccountExecute, key)
		defer span.End()
		return s.setAccountStatus(m)
	case "create_charge":
		if s.cfg.Charges {
			return s.createCharge(ctx, key, m)
		}
	}
	tools := "issue_refund, list_refunds, set_account_status"
	if s.cfg.Charges {
		tools = "create_charge, " + tools
	}
	return problem(http.StatusNotFound, "unknown_tool", fmt.Sprintf("no tool %q; tools: %s", tool, tools))
}

func (s *service) setAccountStatus(m map[string]any) response {
	acct, _ := m["accountId"].(string)
	status, _ := m["status"].(string)
	if acct == "" || status == "" {
		return problem(http.StatusBadRequest, "invalid_arguments", "accountId and status are required strings")
	}
	s.mu.Lock()
	prev := s.accounts[acct]
	s.accounts[acct] = status
	s.mu.Unlock()
	return jsonResponse(map[string]any{"accountId": acct, "status": status, "previous": prev, "changed": prev != status})
}

type refundArgs struct {
	AccountID string
	Amount    float64
	Currency  string
	// ChargeID names the charge refunded ("": none); accepted only with --charges.
	ChargeID string
}

// parseRefund reads issue_refund's arguments (and create_charge's, which are the same without
// chargeId); withCharge accepts the optional chargeId.
func parseRefund(m map[string]any, withCharge bool) (refundArgs, error) {
	var a refundArgs
	a.AccountID, _ = m["accountId"].(string)
	if a.AccountID == "" {
		return a, errors.New("accountId is required and must be a non-empty string")
	}
	amt, ok := m["amount"].(float64)
	if !ok || amt <= 0 {
		return a, errors.New("amount is required and must be a number above 0")
	}
	a.Amount = amt
	a.Currency = "USD"
	if c, ok := m["currency"]; ok {
		cs, ok := c.(string)
		if !ok || len(cs) != 3 {
			return a, errors.New("currency must be a three-letter code")
		}
		a.Currency = cs
	}
	if c, ok := m["chargeId"]; ok && withCharge {
		cs, ok := c.(string)
		if !ok || cs == "" {
			return a, errors.New("chargeId must be a non-empty string (the chargeId create_charge returned)")
		}
		a.ChargeID = cs
	}
	for k := range m {
		switch k {
		case "accountId", "amount", "currency":
		case "chargeId":
			if withCharge {
				continue
			}
			return a, fmt.Errorf("unknown argument %q", k)
		default:
			return a, fmt.Errorf("unknown argument %q", k)
		}
	}
	return a, nil
}

// fingerprint identifies a payload: the canonical JSON of the arguments (encoding/json sorts map
// keys), without the key itself.
func fingerprint(m map[string]any) string {
	b, _ := json.Marshal(m)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func randomID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (s *service) issueRefund(ctx context.Context, key string, m map[string]any) response {
	a, err := parseRefund(m, s.cfg.Charges)
	if err != nil {
		return problem(http.StatusBadRequest, "invalid_arguments", err.Error())
	}
	if a.ChargeID != "" {
		if resp, ok := s.checkCharge(ctx, a); !ok {
			return resp
		}
	}
	return s.idempotent(ctx, "issue_refund", key, m, func() response {
		ctx, span := s.executeSpan(ctx, spanRefundExecute, key)
		defer span.End()
		return s.execute(ctx, key, a)
	})
}

// idempotent runs exec, a mutating tool's side effect, at most once per key in the configured
// mode; m is the tool's arguments without the key (their fingerprint guards against reuse).
func (s *service) idempotent(ctx context.Context, tool, key string, m map[string]any, exec func() response) response {
	resp := s.idempotentCall(ctx, tool, key, m, exec)
	if key != "" {
		s.count(resp)
	}
	return resp
}

func (s *service) idempotentCall(ctx context.Context, tool, key string, m map[string]any, exec func() response) response {
	if s.cfg.Mode == modeNone {
		return exec()
	}
	if key == "" {
		return problem(http.StatusBadRequest, "idempotency_key_missing",
			tool+" requires an Idempotency-Key header (or the idempotencyKey argument over MCP)")
	}
	if s.cfg.UUIDKeys && !uuidKey.MatchString(key) {
		s.log.Warn("invalid idempotency key: want a UUID (36 characters)", "tool", tool, "key", key)
		return problem(http.StatusInternalServerError, "invalid_idempotency_key", "invalid idempotency key")
	}
	if s.cfg.CheckDelay > 0 {
		// Like the work, it runs to the end when the caller has gone: a server does not stop
		// validating a request because its client timed out.
		time.Sleep(s.cfg.CheckDelay)
	}
	fp := fingerprint(m)
	// Keys are scoped per tool: the same key on another tool is another operation.
	scoped := tool + ":" + key
	if s.cfg.Mode == modeNaive {
		// Check, execute, store: two concurrent duplicates both miss the check and both execute.
		existing, err := s.store.Get(ctx, scoped)
		s.traceCheck(key)
		if err != nil {
			return problem(http.StatusInternalServerError, "store_error", err.Error())
		}
		if existing != nil && existing.Done {
			return replayOrMismatch(existing, fp)
		}
		resp := exec()
		if resp.ok() {
			if err := s.store.Put(ctx, scoped, record{Fingerprint: fp, Done: true, Status: resp.Status, Body: resp.Body}, s.cfg.KeyTTL); err != nil {
				s.log.Error("store response", "key", key, "err", err)
			}
		}
		return resp
	}

	token := randomID("")
	existing, err := s.store.Reserve(ctx, scoped, record{Fingerprint: fp, Token: token}, s.cfg.Lease)
	s.traceCheck(key)
	if err != nil {
		return problem(http.StatusInternalServerError, "store_error", err.Error())
	}
	if existing != nil {
		if existing.Fingerprint == fp && existing.Done && s.cfg.Mode == modeRefuse {
			return response{Status: http.StatusConflict, Body: []byte(`{"error":"duplicate request"}`)}
		}
		if existing.Fingerprint != fp || existing.Done {
			return replayOrMismatch(existing, fp)
		}
		return problem(http.StatusConflict, "idempotency_key_in_progress",
			"a request with this idempotency key is still being processed; retry later")
	}
	resp := exec()
	if !resp.ok() {
		// Nothing was executed: free the key so a retry can try again.
		if err := s.store.Release(context.WithoutCancel(ctx), scoped, token); err != nil {
			s.log.Error("release key", "key", key, "err", err)
		}
		return resp
	}
	err = s.store.Complete(context.WithoutCancel(ctx), scoped, record{Fingerprint: fp, Token: token, Done: true, Status: resp.Status, Body: resp.Body}, s.cfg.KeyTTL)
	if err != nil {
		// The lease ran out before the work finished: the side effect happened, but the key may
		// now belong to a retry. Raise --lease above the slowest execution.
		s.log.Warn("store response", "key", key, "err", err)
	}
	return resp
}

func (s *service) traceCheck(key string) {
	if s.cfg.TraceChecks != nil {
		fmt.Fprintf(s.cfg.TraceChecks, "check %s %d\n", key, time.Now().UnixNano())
	}
}

func replayOrMismatch(rec *record, fp string) response {
	if rec.Fingerprint != fp {
		return problem(http.StatusUnprocessableEntity, "idempotency_key_mismatch",
			"this idempotency key was already used with a different payload; use a new key for a new operation")
	}
	return response{Status: rec.Status, Body: rec.Body, Replayed: true}
}

// execute performs the refund: the work, the downstream call, the ledger entry. It runs to the
// end even when the caller has gone away, as a real server would.
func (s *service) execute(ctx context.Context, key string, a refundArgs) response {
	ctx = context.WithoutCancel(ctx)
	r := refund{
		RefundID:  randomID("re_"),
		AccountID: a.AccountID,
		Amount:    a.Amount,
		Currency:  a.Currency,
		Status:    "succeeded",
		Key:       key,
		ChargeID:  a.ChargeID,
	}
	if s.cfg.Work > 0 {
		time.Sleep(s.cfg.Work)
	}
	if s.cfg.Downstream != "" {
		if err := s.notifyDownstream(ctx, key, r); err != nil {
			return problem(http.StatusBadGateway, "downstream_failed", err.Error())
		}
	}
	r.CreatedAt = time.Now().UTC()
	if err := s.store.AddRefund(ctx, r); err != nil {
		return problem(http.StatusInternalServerError, "store_error", err.Error())
	}
	s.mu.Lock()
	s.stats.Executions++
	s.mu.Unlock()
	out := map[string]any{
		"refundId":  r.RefundID,
		"accountId": r.AccountID,
		"amount":    r.Amount,
		"currency":  r.Currency,
		"status":    r.Status,
	}
	if r.ChargeID != "" {
		out["chargeId"] = r.ChargeID
	}
	return jsonResponse(out)
}

func (s *service) notifyDownstream(ctx context.Context, key string, r refund) error {
	body, _ := json.Marshal(map[string]any{
		"refundId": r.RefundID, "accountId": r.AccountID, "amount": r.Amount, "currency": r.Currency,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.Downstream+"/v1/refunds", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("payment processor: %w", err)
	}
	// net/http would re-send a request that carries an Idempotency-Key by itself when a reused
	// connection fails; the server leaves retrying to its caller, so every downstream request is
	// one it decided to send.
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	if key == "" {
		key = r.RefundID
	}
	req.Header.Set("Idempotency-Key", key)
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("payment processor: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("payment processor answered %s", resp.Status)
	}
	return nil
}
