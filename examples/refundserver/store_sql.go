package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // pure Go: the reference server builds without cgo
)

// sqlStore keeps keys and the ledger in a SQL database, PostgreSQL (--store postgres) or one
// SQLite file (--store sqlite, as many small tool servers do), through database/sql. Both run
// the same statements; a dialect says how the schema, placeholders and times are written.
//
// A key is reserved with INSERT … ON CONFLICT DO NOTHING and the affected rows: the primary key
// makes the reservation atomic in both (SQLite runs one write at a time). Expiry times come from
// the server's clock and are compared with it.
//
// Writes run under context.WithoutCancel: a driver interrupts a statement when its context ends
// and can then report a failure for a write that committed. A reservation reported as failed but
// kept would block its key for the whole lease (every retry 409) after a client gave up.
type sqlStore struct {
	db  *sql.DB
	d   dialect
	q   statements
	now func() time.Time
}

// dialect is what differs between the databases the store speaks to.
type dialect struct {
	// expires and created name the time columns; timeValue writes a time the way they hold it.
	expires, created string
	timeValue        func(time.Time) any
	// numbered placeholders ($1, $2, …) instead of ?.
	numbered bool
}

var (
	postgresDialect = dialect{expires: "expires_at", created: "created_at", timeValue: func(t time.Time) any { return t }, numbered: true}
	// SQLite keeps times as Unix milliseconds.
	sqliteDialect = dialect{expires: "expires_ms", created: "created_ms", timeValue: func(t time.Time) any { return t.UnixMilli() }}
)

// statements are the store's SQL, written once for both dialects.
type statements struct {
	expire, reserve, complete, release, get, put, addRefund, refunds, addCharge, charge string
}

func (d dialect) statements() statements {
	cols := strings.NewReplacer("{expires}", d.expires, "{created}", d.created)
	q := func(s string) string {
		s = cols.Replace(s)
		if !d.numbered {
			return s
		}
		var b strings.Builder
		n := 0
		for _, r := range s {
			if r == '?' {
				n++
				b.WriteString("$" + strconv.Itoa(n))
				continue
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	return statements{
		expire: q(`DELETE FROM refundserver_keys WHERE key = ? AND {expires} <= ?`),
		reserve: q(`INSERT INTO refundserver_keys (key, fingerprint, token, {expires})
			VALUES (?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`),
		complete: q(`UPDATE refundserver_keys SET done = TRUE, token = '', status = ?, body = ?, {expires} = ?
			WHERE key = ? AND token = ? AND NOT done AND {expires} > ?`),
		release: q(`DELETE FROM refundserver_keys WHERE key = ? AND token = ? AND NOT done`),
		get: q(`SELECT fingerprint, token, done, status, body
			FROM refundserver_keys WHERE key = ? AND {expires} > ?`),
		put: q(`INSERT INTO refundserver_keys (key, fingerprint, token, done, status, body, {expires})
			VALUES (?, ?, '', ?, ?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, token = '', done = excluded.done,
				status = excluded.status, body = excluded.body, {expires} = excluded.{expires}`),
		addRefund: q(`INSERT INTO refunds (refund_id, account_id, amount, currency, status, idempotency_key, charge_id, {created})
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
		refunds: q(`SELECT refund_id, account_id, amount, currency, status, idempotency_key, charge_id, {created}
			FROM refunds WHERE ? = '' OR account_id = ? ORDER BY {created}, refund_id`),
		addCharge: q(`INSERT INTO charges (charge_id, account_id, amount, currency, idempotency_key, {created})
			VALUES (?, ?, ?, ?, ?, ?)`),
		charge: q(`SELECT charge_id, account_id, amount, currency, idempotency_key, {created}
			FROM charges WHERE charge_id = ?`),
	}
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

func newPGStore(ctx context.Context, dsn string) (*sqlStore, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres %q: %w", dsn, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	// Bursts of duplicates would otherwise open a connection each, and several servers share
	// one PostgreSQL.
	db.SetMaxOpenConns(8)
	// Concurrent servers may create the schema at once; an advisory lock serialises them.
	if err := inTx(ctx, db, `SELECT pg_advisory_xact_lock(7364281)`, pgSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create tables: %w", err)
	}
	return newSQLStore(db, postgresDialect), nil
}

func newSQLiteStore(ctx context.Context, path string) (*sqlStore, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), OmitHost: true}
	// Several servers may share the file (--store sqlite behind a load balancer): each waits
	// up to 5s for another's write rather than fail at once. WAL mode lets readers (idemtest's
	// sqlite file probe) read while the server writes.
	u.RawQuery = url.Values{"_journal_mode": {"WAL"}, "_busy_timeout": {"5000"}, "_txlock": {"immediate"}}.Encode()
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, sqliteSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create tables in %s: %w", path, err)
	}
	return newSQLStore(db, sqliteDialect), nil
}

func newSQLStore(db *sql.DB, d dialect) *sqlStore {
	return &sqlStore{db: db, d: d, q: d.statements(), now: time.Now}
}

// inTx runs the statements in one transaction.
func inTx(ctx context.Context, db *sql.DB, stmts ...string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // after Commit: sql.ErrTxDone, nothing to undo
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// at is the time d from now, as the dialect's time columns hold it.
func (s *sqlStore) at(d time.Duration) any { return s.d.timeValue(s.now().Add(d)) }

func (s *sqlStore) Reserve(ctx context.Context, key string, rec record, lease time.Duration) (*record, error) {
	ctx = context.WithoutCancel(ctx)
	return claim(ctx, key, func() (bool, error) {
		if _, err := s.db.ExecContext(ctx, s.q.expire, key, s.at(0)); err != nil {
			return false, fmt.Errorf("expire: %w", err)
		}
		res, err := s.db.ExecContext(ctx, s.q.reserve, key, rec.Fingerprint, rec.Token, s.at(lease))
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n == 1, err
	}, s.Get)
}

func (s *sqlStore) Complete(ctx context.Context, key string, rec record, ttl time.Duration) error {
	ctx = context.WithoutCancel(ctx)
	res, err := s.db.ExecContext(ctx, s.q.complete, rec.Status, rec.Body, s.at(ttl), key, rec.Token, s.at(0))
	if err != nil {
		return fmt.Errorf("complete key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errNotOwner
	}
	return nil
}

func (s *sqlStore) Release(ctx context.Context, key, token string) error {
	if _, err := s.db.ExecContext(context.WithoutCancel(ctx), s.q.release, key, token); err != nil {
		return fmt.Errorf("release key: %w", err)
	}
	return nil
}

func (s *sqlStore) Get(ctx context.Context, key string) (*record, error) {
	var rec record
	err := s.db.QueryRowContext(ctx, s.q.get, key, s.at(0)).Scan(&rec.Fingerprint, &rec.Token, &rec.Done, &rec.Status, &rec.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	return &rec, nil
}

func (s *sqlStore) Put(ctx context.Context, key string, rec record, ttl time.Duration) error {
	_, err := s.db.ExecContext(context.WithoutCancel(ctx), s.q.put, key, rec.Fingerprint, rec.Done, rec.Status, rec.Body, s.at(ttl))
	return err
}

func (s *sqlStore) AddRefund(ctx context.Context, r refund) error {
	_, err := s.db.ExecContext(context.WithoutCancel(ctx), s.q.addRefund,
		r.RefundID, r.AccountID, r.Amount, r.Currency, r.Status, r.Key, r.ChargeID, s.d.timeValue(r.CreatedAt))
	return err
}

func (s *sqlStore) Refunds(ctx context.Context, accountID string) ([]refund, error) {
	rows, err := s.db.QueryContext(ctx, s.q.refunds, accountID, accountID)
	if err != nil {
		return nil, fmt.Errorf("list refunds: %w", err)
	}
	defer rows.Close()
	out := []refund{}
	for rows.Next() {
		var r refund
		if err := rows.Scan(&r.RefundID, &r.AccountID, &r.Amount, &r.Currency, &r.Status, &r.Key, &r.ChargeID, (*sqlTime)(&r.CreatedAt)); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *sqlStore) AddCharge(ctx context.Context, c charge) error {
	_, err := s.db.ExecContext(context.WithoutCancel(ctx), s.q.addCharge,
		c.ChargeID, c.AccountID, c.Amount, c.Currency, c.Key, s.d.timeValue(c.CreatedAt))
	return err
}

func (s *sqlStore) Charge(ctx context.Context, id string) (*charge, error) {
	var c charge
	err := s.db.QueryRowContext(ctx, s.q.charge, id).Scan(&c.ChargeID, &c.AccountID, &c.Amount, &c.Currency, &c.Key, (*sqlTime)(&c.CreatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read charge: %w", err)
	}
	return &c, nil
}

func (s *sqlStore) Close() error { return s.db.Close() }

// sqlTime reads a time column of either dialect: a timestamp, or Unix milliseconds.
type sqlTime time.Time

func (t *sqlTime) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		*t = sqlTime(v)
	case int64:
		*t = sqlTime(time.UnixMilli(v).UTC())
	default:
		return fmt.Errorf("time column holds %T", src)
	}
	return nil
}
