package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgStore reserves a key with INSERT … ON CONFLICT DO NOTHING and checks the affected rows: the
// primary key makes the reservation atomic. Expired rows are deleted just before the insert.
type pgStore struct {
	db *pgxpool.Pool
}

const pgSchema = `
CREATE TABLE IF NOT EXISTS refundserver_keys (
	key          text PRIMARY KEY,
	fingerprint  text NOT NULL,
	token        text NOT NULL DEFAULT '',
	done         boolean NOT NULL DEFAULT false,
	status       integer NOT NULL DEFAULT 0,
	body         bytea,
	expires_at   timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS refunds (
	refund_id        text PRIMARY KEY,
	account_id       text NOT NULL,
	amount           double precision NOT NULL,
	currency         text NOT NULL,
	status           text NOT NULL,
	idempotency_key  text NOT NULL DEFAULT '',
	created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS refunds_account ON refunds (account_id);
ALTER TABLE refunds ADD COLUMN IF NOT EXISTS charge_id text NOT NULL DEFAULT '';
CREATE TABLE IF NOT EXISTS charges (
	charge_id        text PRIMARY KEY,
	account_id       text NOT NULL,
	amount           double precision NOT NULL,
	currency         text NOT NULL,
	idempotency_key  text NOT NULL DEFAULT '',
	created_at       timestamptz NOT NULL DEFAULT now()
);
`

func newPGStore(ctx context.Context, dsn string) (*pgStore, error) {
	db, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres %q: %w", dsn, err)
	}
	if err := db.Ping(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	// Concurrent servers may create the schema at once; an advisory lock serialises them.
	tx, err := db.Begin(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }() // after Commit: pgx.ErrTxClosed, nothing to undo
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7364281)`); err != nil {
		db.Close()
		return nil, fmt.Errorf("lock schema: %w", err)
	}
	if _, err := tx.Exec(ctx, pgSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create tables: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("create tables: %w", err)
	}
	return &pgStore{db: db}, nil
}

func (s *pgStore) Reserve(ctx context.Context, key string, rec record, lease time.Duration) (*record, error) {
	return claim(ctx, key, func() (bool, error) {
		if _, err := s.db.Exec(ctx, `DELETE FROM refundserver_keys WHERE key = $1 AND expires_at <= now()`, key); err != nil {
			return false, fmt.Errorf("expire: %w", err)
		}
		tag, err := s.db.Exec(ctx, `INSERT INTO refundserver_keys (key, fingerprint, token, expires_at)
			VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond') ON CONFLICT (key) DO NOTHING`,
			key, rec.Fingerprint, rec.Token, lease.Milliseconds())
		return err == nil && tag.RowsAffected() == 1, err
	}, s.Get)
}

func (s *pgStore) Complete(ctx context.Context, key string, rec record, ttl time.Duration) error {
	tag, err := s.db.Exec(ctx, `UPDATE refundserver_keys
		SET done = true, token = '', status = $3, body = $4, expires_at = now() + $5 * interval '1 millisecond'
		WHERE key = $1 AND token = $2 AND NOT done AND expires_at > now()`,
		key, rec.Token, rec.Status, rec.Body, ttl.Milliseconds())
	if err != nil {
		return fmt.Errorf("complete key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return errNotOwner
	}
	return nil
}

func (s *pgStore) Release(ctx context.Context, key, token string) error {
	_, err := s.db.Exec(ctx, `DELETE FROM refundserver_keys WHERE key = $1 AND token = $2 AND NOT done`, key, token)
	if err != nil {
		return fmt.Errorf("release key: %w", err)
	}
	return nil
}

func (s *pgStore) Get(ctx context.Context, key string) (*record, error) {
	var rec record
	err := s.db.QueryRow(ctx, `SELECT fingerprint, token, done, status, coalesce(body, ''::bytea)
		FROM refundserver_keys WHERE key = $1 AND expires_at > now()`, key).
		Scan(&rec.Fingerprint, &rec.Token, &rec.Done, &rec.Status, &rec.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	return &rec, nil
}

func (s *pgStore) Put(ctx context.Context, key string, rec record, ttl time.Duration) error {
	_, err := s.db.Exec(ctx, `INSERT INTO refundserver_keys (key, fingerprint, token, done, status, body, expires_at)
		VALUES ($1, $2, '', $3, $4, $5, now() + $6 * interval '1 millisecond')
		ON CONFLICT (key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, token = '', done = EXCLUDED.done,
			status = EXCLUDED.status, body = EXCLUDED.body, expires_at = EXCLUDED.expires_at`,
		key, rec.Fingerprint, rec.Done, rec.Status, rec.Body, ttl.Milliseconds())
	return err
}

func (s *pgStore) AddRefund(ctx context.Context, r refund) error {
	_, err := s.db.Exec(ctx, `INSERT INTO refunds (refund_id, account_id, amount, currency, status, idempotency_key, charge_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, r.RefundID, r.AccountID, r.Amount, r.Currency, r.Status, r.Key, r.ChargeID, r.CreatedAt)
	return err
}

func (s *pgStore) Refunds(ctx context.Context, accountID string) ([]refund, error) {
	rows, err := s.db.Query(ctx, `SELECT refund_id, account_id, amount, currency, status, idempotency_key, charge_id, created_at
		FROM refunds WHERE $1 = '' OR account_id = $1 ORDER BY created_at, refund_id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("list refunds: %w", err)
	}
	defer rows.Close()
	out := []refund{}
	for rows.Next() {
		var r refund
		if err := rows.Scan(&r.RefundID, &r.AccountID, &r.Amount, &r.Currency, &r.Status, &r.Key, &r.ChargeID, &r.CreatedAt); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *pgStore) AddCharge(ctx context.Context, c charge) error {
	_, err := s.db.Exec(ctx, `INSERT INTO charges (charge_id, account_id, amount, currency, idempotency_key, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, c.ChargeID, c.AccountID, c.Amount, c.Currency, c.Key, c.CreatedAt)
	return err
}

func (s *pgStore) Charge(ctx context.Context, id string) (*charge, error) {
	var c charge
	err := s.db.QueryRow(ctx, `SELECT charge_id, account_id, amount, currency, idempotency_key, created_at
		FROM charges WHERE charge_id = $1`, id).Scan(&c.ChargeID, &c.AccountID, &c.Amount, &c.Currency, &c.Key, &c.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read charge: %w", err)
	}
	return &c, nil
}

func (s *pgStore) Close() error { s.db.Close(); return nil }
