package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// record is what a store keeps for one idempotency key.
type record struct {
	// Fingerprint identifies the request payload the key was first used with.
	Fingerprint string `json:"fp"`
	// Token identifies the reservation that owns an in-flight record, so a request whose lease
	// expired cannot complete or release a key another request has since reserved.
	Token string `json:"token,omitempty"`
	// Done is false while the first request is still executing.
	Done   bool   `json:"done"`
	Status int    `json:"status,omitempty"`
	Body   []byte `json:"body,omitempty"`
}

// refund is one executed refund in the ledger.
type refund struct {
	RefundID  string    `json:"refundId"`
	AccountID string    `json:"accountId"`
	Amount    float64   `json:"amount"`
	Currency  string    `json:"currency"`
	Status    string    `json:"status"`
	Key       string    `json:"idempotencyKey,omitempty"`
	ChargeID  string    `json:"chargeId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// charge is one executed charge (served with --charges); a refund may name it.
type charge struct {
	ChargeID  string    `json:"chargeId"`
	AccountID string    `json:"accountId"`
	Amount    float64   `json:"amount"`
	Currency  string    `json:"currency"`
	Key       string    `json:"idempotencyKey,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// store keeps idempotency records and the refund ledger. Reserve is the only operation the
// correct ("locked") mode relies on for exclusion: it must be atomic in every implementation.
type store interface {
	// Reserve claims key with an in-flight record for lease. It returns (nil, nil) when the
	// caller now owns the key, or the existing record when someone else does or did.
	Reserve(ctx context.Context, key string, rec record, lease time.Duration) (*record, error)
	// Complete replaces the caller's in-flight record (matched by token) with the response.
	Complete(ctx context.Context, key string, rec record, ttl time.Duration) error
	// Release deletes the caller's in-flight record (matched by token) so a retry can execute.
	Release(ctx context.Context, key, token string) error
	// Get and Put are the non-atomic check and store of the naive mode.
	Get(ctx context.Context, key string) (*record, error)
	Put(ctx context.Context, key string, rec record, ttl time.Duration) error
	// AddRefund appends to the ledger; Refunds lists it, filtered by account when accountID != "".
	AddRefund(ctx context.Context, r refund) error
	Refunds(ctx context.Context, accountID string) ([]refund, error)
	// AddCharge records a charge; Charge finds one by id (nil, nil when there is none).
	AddCharge(ctx context.Context, c charge) error
	Charge(ctx context.Context, id string) (*charge, error)
	Close() error
}

var errNotOwner = errors.New("idempotency key is no longer reserved by this request")

// memStore is the default store: everything in process memory, nothing to install.
type memStore struct {
	mu      sync.Mutex
	records map[string]memEntry
	ledger  []refund
	charges map[string]charge
	now     func() time.Time
}

type memEntry struct {
	rec     record
	expires time.Time
}

func newMemStore() *memStore {
	return &memStore{records: map[string]memEntry{}, charges: map[string]charge{}, now: time.Now}
}

func (m *memStore) live(key string) (memEntry, bool) {
	e, ok := m.records[key]
	if ok && !m.now().Before(e.expires) {
		delete(m.records, key)
		return memEntry{}, false
	}
	return e, ok
}

func (m *memStore) Reserve(_ context.Context, key string, rec record, lease time.Duration) (*record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.live(key); ok {
		r := e.rec
		return &r, nil
	}
	m.records[key] = memEntry{rec: rec, expires: m.now().Add(lease)}
	return nil, nil
}

func (m *memStore) Complete(_ context.Context, key string, rec record, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.live(key)
	if !ok || e.rec.Done || e.rec.Token != rec.Token {
		return errNotOwner
	}
	rec.Token = ""
	m.records[key] = memEntry{rec: rec, expires: m.now().Add(ttl)}
	return nil
}

func (m *memStore) Release(_ context.Context, key, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.live(key); ok && !e.rec.Done && e.rec.Token == token {
		delete(m.records, key)
	}
	return nil
}

func (m *memStore) Get(_ context.Context, key string) (*record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.live(key); ok {
		r := e.rec
		return &r, nil
	}
	return nil, nil
}

func (m *memStore) Put(_ context.Context, key string, rec record, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records[key] = memEntry{rec: rec, expires: m.now().Add(ttl)}
	return nil
}

func (m *memStore) AddRefund(_ context.Context, r refund) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ledger = append(m.ledger, r)
	return nil
}

func (m *memStore) Refunds(_ context.Context, accountID string) ([]refund, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []refund{}
	for _, r := range m.ledger {
		if accountID == "" || r.AccountID == accountID {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

func (m *memStore) AddCharge(_ context.Context, c charge) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.charges[c.ChargeID] = c
	return nil
}

func (m *memStore) Charge(_ context.Context, id string) (*charge, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.charges[id]; ok {
		return &c, nil
	}
	return nil, nil
}

func (m *memStore) Close() error { return nil }

// claim is the loop a shared store's Reserve runs: take tries to create the in-flight record
// (false: the key is held), get reads the record that holds it. A record that expired between
// the two is claimed again, ten times at most.
func claim(ctx context.Context, key string, take func() (bool, error), get func(context.Context, string) (*record, error)) (*record, error) {
	for range 10 {
		ok, err := take()
		if err != nil {
			return nil, fmt.Errorf("reserve key: %w", err)
		}
		if ok {
			return nil, nil
		}
		existing, err := get(ctx, key)
		if err != nil {
			return nil, err
		}
		if existing != nil {
			return existing, nil
		}
	}
	return nil, errors.New("reserve key: record keeps expiring")
}
