package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // pure Go: the reference server builds without cgo
)

// sqliteStore keeps keys and the ledger in one SQLite file, as many small tool servers do: a
// key is reserved with INSERT … ON CONFLICT DO NOTHING, atomic because SQLite runs one write at
// a time. WAL mode lets readers (idemtest's sqlite file probe) read while the server writes.
// Times are Unix milliseconds, compared with the server's clock.
//
// Writes run under context.WithoutCancel: the driver interrupts a statement when its context
// ends and can then report a failure for a write that committed. A reservation reported as failed
// but kept would block its key for the whole lease (every retry 409) after a client gave up.
type sqliteStore struct {
	db  *sql.DB
	now func() time.Time
}

const sqliteSchema = `
CREATE TABLE IF NOT EXISTS refundserver_keys (
	key          TEXT PRIMARY KEY,
	fingerprint  TEXT NOT NULL,
	token        TEXT NOT NULL DEFAULT '',
	done         INTEGER NOT NULL DEFAULT 0,
	status       INTEGER NOT NULL DEFAULT 0,
	body         BLOB,
	expires_ms   INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS refunds (
	refund_id        TEXT PRIMARY KEY,
	account_id       TEXT NOT NULL,
	amount           REAL NOT NULL,
	currency         TEXT NOT NULL,
	status           TEXT NOT NULL,
	idempotency_key  TEXT NOT NULL DEFAULT '',
	charge_id        TEXT NOT NULL DEFAULT '',
	created_ms       INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS refunds_account ON refunds (account_id);
CREATE TABLE IF NOT EXISTS charges (
	charge_id        TEXT PRIMARY KEY,
	account_id       TEXT NOT NULL,
	amount           REAL NOT NULL,
	currency         TEXT NOT NULL,
	idempotency_key  TEXT NOT NULL DEFAULT '',
	created_ms       INTEGER NOT NULL
);
`

func newSQLiteStore(ctx context.Context, path string) (*sqliteStore, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), OmitHost: true}
	// Several servers may share the file (--store sqlite behind a load balancer): each waits
	// up to 5s for another's write rather than fail at once.
	u.RawQuery = url.Values{"_journal_mode": {"WAL"}, "_busy_timeout": {"5000"}, "_txlock": {"immediate"}}.Encode()
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, sqliteSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create tables in %s: %w", path, err)
	}
	return &sqliteStore{db: db, now: time.Now}, nil
}

func (s *sqliteStore) ms(d time.Duration) int64 { return s.now().Add(d).UnixMilli() }

func (s *sqliteStore) Reserve(ctx context.Context, key string, rec record, lease time.Duration) (*record, error) {
	ctx = context.WithoutCancel(ctx)
	return claim(ctx, key, func() (bool, error) {
		if _, err := s.db.ExecContext(ctx, `DELETE FROM refundserver_keys WHERE key = ? AND expires_ms <= ?`, key, s.ms(0)); err != nil {
			return false, fmt.Errorf("expire: %w", err)
		}
		res, err := s.db.ExecContext(ctx, `INSERT INTO refundserver_keys (key, fingerprint, token, expires_ms)
			VALUES (?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`, key, rec.Fingerprint, rec.Token, s.ms(lease))
		if err != nil {
			return false, err
		}
		n, _ := res.RowsAffected()
		return n == 1, nil
	}, s.Get)
}

func (s *sqliteStore) Complete(ctx context.Context, key string, rec record, ttl time.Duration) error {
	ctx = context.WithoutCancel(ctx)
	res, err := s.db.ExecContext(ctx, `UPDATE refundserver_keys
		SET done = 1, token = '', status = ?, body = ?, expires_ms = ?
		WHERE key = ? AND token = ? AND done = 0 AND expires_ms > ?`,
		rec.Status, rec.Body, s.ms(ttl), key, rec.Token, s.ms(0))
	if err != nil {
		return fmt.Errorf("complete key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errNotOwner
	}
	return nil
}

func (s *sqliteStore) Release(ctx context.Context, key, token string) error {
	ctx = context.WithoutCancel(ctx)
	if _, err := s.db.ExecContext(ctx, `DELETE FROM refundserver_keys WHERE key = ? AND token = ? AND done = 0`, key, token); err != nil {
		return fmt.Errorf("release key: %w", err)
	}
	return nil
}

func (s *sqliteStore) Get(ctx context.Context, key string) (*record, error) {
	var rec record
	err := s.db.QueryRowContext(ctx, `SELECT fingerprint, token, done, status, coalesce(body, x'')
		FROM refundserver_keys WHERE key = ? AND expires_ms > ?`, key, s.ms(0)).
		Scan(&rec.Fingerprint, &rec.Token, &rec.Done, &rec.Status, &rec.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	return &rec, nil
}

func (s *sqliteStore) Put(ctx context.Context, key string, rec record, ttl time.Duration) error {
	ctx = context.WithoutCancel(ctx)
	_, err := s.db.ExecContext(ctx, `INSERT INTO refundserver_keys (key, fingerprint, token, done, status, body, expires_ms)
		VALUES (?, ?, '', ?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, token = '', done = excluded.done,
			status = excluded.status, body = excluded.body, expires_ms = excluded.expires_ms`,
		key, rec.Fingerprint, rec.Done, rec.Status, rec.Body, s.ms(ttl))
	return err
}

func (s *sqliteStore) AddRefund(ctx context.Context, r refund) error {
	ctx = context.WithoutCancel(ctx)
	_, err := s.db.ExecContext(ctx, `INSERT INTO refunds (refund_id, account_id, amount, currency, status, idempotency_key, charge_id, created_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, r.RefundID, r.AccountID, r.Amount, r.Currency, r.Status, r.Key, r.ChargeID, r.CreatedAt.UnixMilli())
	return err
}

func (s *sqliteStore) Refunds(ctx context.Context, accountID string) ([]refund, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT refund_id, account_id, amount, currency, status, idempotency_key, charge_id, created_ms
		FROM refunds WHERE ?1 = '' OR account_id = ?1 ORDER BY created_ms, refund_id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("list refunds: %w", err)
	}
	defer rows.Close()
	out := []refund{}
	for rows.Next() {
		var r refund
		var created int64
		if err := rows.Scan(&r.RefundID, &r.AccountID, &r.Amount, &r.Currency, &r.Status, &r.Key, &r.ChargeID, &created); err != nil {
			return nil, err
		}
		r.CreatedAt = time.UnixMilli(created).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *sqliteStore) AddCharge(ctx context.Context, c charge) error {
	ctx = context.WithoutCancel(ctx)
	_, err := s.db.ExecContext(ctx, `INSERT INTO charges (charge_id, account_id, amount, currency, idempotency_key, created_ms)
		VALUES (?, ?, ?, ?, ?, ?)`, c.ChargeID, c.AccountID, c.Amount, c.Currency, c.Key, c.CreatedAt.UnixMilli())
	return err
}

func (s *sqliteStore) Charge(ctx context.Context, id string) (*charge, error) {
	var c charge
	var created int64
	err := s.db.QueryRowContext(ctx, `SELECT charge_id, account_id, amount, currency, idempotency_key, created_ms
		FROM charges WHERE charge_id = ?`, id).Scan(&c.ChargeID, &c.AccountID, &c.Amount, &c.Currency, &c.Key, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read charge: %w", err)
	}
	c.CreatedAt = time.UnixMilli(created).UTC()
	return &c, nil
}

func (s *sqliteStore) Close() error { return s.db.Close() }
