package probe

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/scenario"
)

// openWriter opens path read-write through the same driver the probe uses, as a server would.
func openWriter(t *testing.T, path, journal string) *sql.DB {
	t.Helper()
	u := url.URL{Scheme: "file", Path: path, OmitHost: true, RawQuery: "_journal_mode=" + journal}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE TABLE refunds (id TEXT PRIMARY KEY, account TEXT, amount REAL, cents INTEGER, note BLOB, gone TEXT)`,
		`INSERT INTO refunds VALUES ('re_1', 'acct_1', 12.5, 1250, x'6869', NULL)`,
		`INSERT INTO refunds VALUES ('re_2', 'acct_2', 3, 300, NULL, NULL)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func sqliteProbe(t *testing.T, dir, path, query string, optional bool, args ...string) *scenario.FileProbe {
	t.Helper()
	env := assert.Env{"session": ""}
	tmpl, err := assert.CompileTemplate(path, env)
	if err != nil {
		t.Fatal(err)
	}
	fp := &scenario.FileProbe{Path: tmpl, Dir: dir, Format: scenario.FileSQLite, Query: query, Optional: optional}
	for _, a := range args {
		at, err := assert.CompileTemplate(a, env)
		if err != nil {
			t.Fatal(err)
		}
		fp.Args = append(fp.Args, at)
	}
	return fp
}

func evalJSON(t *testing.T, fp *scenario.FileProbe) (string, error) {
	t.Helper()
	v, err := evalFile(context.Background(), fp, map[string]any{"session": "acct_1"})
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), nil
}

func TestSQLiteProbe(t *testing.T) {
	dir := t.TempDir()
	openWriter(t, filepath.Join(dir, "refunds.db"), "wal")
	// A name SQLite's URI syntax would cut short if the path were not escaped.
	odd := filepath.Join(dir, "odd ?name#1%.db")
	openWriter(t, odd, "delete")
	mkfifo(t, filepath.Join(dir, "pipe.db"))
	for _, tt := range []struct {
		name, path, query string
		args              []string
		optional          bool
		want, err         string
	}{
		{name: "rows as maps, typed", path: "refunds.db", query: "select * from refunds order by id",
			want: `[{"account":"acct_1","amount":12.5,"cents":1250,"gone":null,"id":"re_1","note":"hi"},` +
				`{"account":"acct_2","amount":3,"cents":300,"gone":null,"id":"re_2","note":null}]`},
		{name: "a count", path: "refunds.db", query: "SELECT count(*) AS n FROM refunds", want: `[{"n":2}]`},
		{name: "args from the template env", path: "refunds.db", query: "select id from refunds where account = ?", args: []string{"{{ session }}"}, want: `[{"id":"re_1"}]`},
		{name: "with and a trailing semicolon", path: "refunds.db", query: "with r as (select id from refunds) select count(*) as n from r;", want: `[{"n":2}]`},
		{name: "no rows", path: "refunds.db", query: "select id from refunds where 0", want: `[]`},
		{name: "a path with ? and # in it", path: odd, query: "select count(*) as n from refunds", want: `[{"n":2}]`},
		{name: "a write is refused by the read-only connection", path: "refunds.db", query: "delete from refunds", err: "readonly"},
		{name: "an unknown table", path: "refunds.db", query: "select * from refund", err: "no such table: refund"},
		{name: "missing is an error", path: "nope.db", query: "select 1", err: "no such file"},
		{name: "missing and optional is no rows", path: "nope.db", query: "select 1", optional: true, want: `[]`},
		{name: "a fifo is refused, not waited on", path: "pipe.db", query: "select 1", err: "not a regular file"},
		{name: "a directory is refused", path: ".", query: "select 1", err: "not a regular file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := evalJSON(t, sqliteProbe(t, dir, tt.path, tt.query, tt.optional, tt.args...))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("value = %s, want %s", got, tt.want)
			}
		})
	}
	// The refused write left the rows, and the missing database was not created.
	if got, err := evalJSON(t, sqliteProbe(t, dir, "refunds.db", "select count(*) as n from refunds", false)); err != nil || got != `[{"n":2}]` {
		t.Errorf("after the refused delete: %s, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.db")); !os.IsNotExist(err) {
		t.Errorf("the probe created the missing database: %v", err)
	}
}

// TestSQLiteProbeSeesWriter: the database is not opened immutable, so each evaluation sees what
// a writer holding its connection open has committed since, in WAL and rollback-journal modes.
func TestSQLiteProbeSeesWriter(t *testing.T) {
	for _, journal := range []string{"wal", "delete"} {
		t.Run(journal, func(t *testing.T) {
			dir := t.TempDir()
			w := openWriter(t, filepath.Join(dir, "state.db"), journal)
			fp := sqliteProbe(t, dir, "state.db", "select count(*) as n from refunds", false)
			for i, want := range []string{`[{"n":2}]`, `[{"n":3}]`} {
				got, err := evalJSON(t, fp)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("read %d = %s, want %s", i, got, want)
				}
				if _, err := w.Exec(`INSERT INTO refunds (id) VALUES (?)`, i+3); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestSQLiteProbeBusyBounded: a writer that holds the database locked makes the probe fail after
// its busy timeout, rather than wait for as long as the lock is held.
func TestSQLiteProbeBusyBounded(t *testing.T) {
	defer func(d time.Duration) { sqliteBusy = d }(sqliteBusy)
	sqliteBusy = 50 * time.Millisecond
	dir := t.TempDir()
	w := openWriter(t, filepath.Join(dir, "state.db"), "delete")
	// An exclusive transaction of a rollback-journal database keeps every reader out.
	conn, err := w.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	_, err = evalJSON(t, sqliteProbe(t, dir, "state.db", "select count(*) as n from refunds", false))
	if err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("err = %v, want the lock named", err)
	}
}

func TestSQLiteProbeCap(t *testing.T) {
	defer func(n int) { MaxRows = n }(MaxRows)
	MaxRows = 1
	dir := t.TempDir()
	openWriter(t, filepath.Join(dir, "state.db"), "wal")
	_, err := evalJSON(t, sqliteProbe(t, dir, "state.db", "select id from refunds", false))
	if err == nil || !strings.Contains(err.Error(), "more than 1 rows") {
		t.Fatalf("err = %v, want the cap named", err)
	}
}

// TestSQLiteProbeClosedWAL: a WAL database no process has open is read, and the database file
// is left byte for byte as it was (SQLite's read-only reader does leave empty -wal and -shm files
// beside it: it needs the shared-memory index to read a WAL database).
func TestSQLiteProbeClosedWAL(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	if err := openWriter(t, path, "wal").Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := evalJSON(t, sqliteProbe(t, dir, "state.db", "select count(*) as n from refunds", false))
	if err != nil || got != `[{"n":2}]` {
		t.Fatalf("value = %s, %v; want [{\"n\":2}]", got, err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("the probe changed the database file")
	}
}

// TestSQLiteProbeInterrupted: a query that never ends is interrupted when the probe's context
// ends (Eval gives every probe 10s), not left running.
func TestSQLiteProbeInterrupted(t *testing.T) {
	dir := t.TempDir()
	openWriter(t, filepath.Join(dir, "state.db"), "wal")
	fp := sqliteProbe(t, dir, "state.db", "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) as n from c", false)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	v, err := evalFile(ctx, fp, map[string]any{"session": ""})
	if err == nil {
		t.Fatalf("value = %v, want the query interrupted", v)
	}
	t.Log(err)
}

// TestSQLiteProbeBytes: a value SQLite would make over MaxBytes is refused by SQLite before it
// is allocated (zeroblob(2000000000) took the machine's memory, randomblob ran minutes past the
// probe's deadline), and rows whose values add up to more are refused as they are read.
func TestSQLiteProbeBytes(t *testing.T) {
	defer func(n int64) { MaxBytes = n }(MaxBytes)
	MaxBytes = 1 << 20
	dir := t.TempDir()
	openWriter(t, filepath.Join(dir, "state.db"), "wal")
	for _, tc := range []struct{ name, query, want string }{
		{"under the cap", "select length(zeroblob(1000000)) as n", `[{"n":1000000}]`},
		{"zeroblob", "select zeroblob(2000000000) as b", ""},
		{"randomblob", "select randomblob(2000000000) as b", ""},
		{"one value just over", "select zeroblob(1048577) as b", ""},
		{"a long string made in steps", "with recursive c(s) as (select 'x' union all select s || s from c where length(s) < 4000000) select length(s) as n from c", ""},
		{"many rows under the value cap", "with recursive c(x) as (select 1 union all select x + 1 from c where x < 20) select zeroblob(100000) as b from c", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := evalJSON(t, sqliteProbe(t, dir, "state.db", tc.query, false))
			if tc.want != "" {
				if err != nil || got != tc.want {
					t.Fatalf("value %s, %v; want %s", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "over 1 MiB") {
				t.Fatalf("err = %v (value of %d bytes), want the cap named", err, len(got))
			}
		})
	}
}
