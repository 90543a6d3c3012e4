package probe

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	// The pure-Go SQLite driver: idemtest stays one static binary with no C toolchain.
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/idemtest/idemtest/internal/regularfile"
	"github.com/idemtest/idemtest/internal/scenario"
)

// sqliteBusy is how long a probe waits for a writer's lock before the query fails: a server
// that holds its database locked longer than this is reported, not waited on.
var sqliteBusy = 2 * time.Second

// evalSQLite runs a file probe's query on an SQLite database; its value is the list of rows,
// each a map, as for the sql probe. The database is opened read-only (mode=ro, never immutable,
// so what a concurrent writer commits is seen): that, not the loader's check that the query is
// a SELECT, is what keeps a probe from writing. A missing database is an error unless optional,
// and then reads as no rows.
func evalSQLite(ctx context.Context, fp *scenario.FileProbe, env map[string]any) (any, error) {
	path, err := evalText(fp.Path, env)
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(fp.Dir, path)
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, err
	}
	args := make([]any, len(fp.Args))
	for i, t := range fp.Args {
		if args[i], err = t.Eval(env); err != nil {
			return nil, err
		}
	}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) && fp.Optional {
		return []any{}, nil
	}
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s): a file probe reads only regular files", path, regularfile.Kind(st.Mode()))
	}
	db, err := sql.Open("sqlite", sqliteDSN(path))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer conn.Close()
	// SQLite itself refuses to make a string or blob over the cap (zeroblob(2000000000),
	// randomblob, a long group_concat): the value is never allocated, and a function that
	// makes it cannot run past the deadline, which is checked between the query's steps only.
	if _, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, int(min(MaxBytes, 1<<30))); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	rows, err := conn.QueryContext(ctx, fp.Query, args...)
	if err != nil {
		return nil, sqliteErr(path, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := []any{}
	var size int64
	for rows.Next() {
		if len(out) == MaxRows {
			return nil, fmt.Errorf("query %s: %w", path, tooManyRows())
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, sqliteErr(path, err)
		}
		for _, v := range vals {
			size += valueSize(v)
		}
		if size > MaxBytes {
			return nil, fmt.Errorf("query %s: %w", path, tooManyBytes())
		}
		row := make(map[string]any, len(cols))
		for i, c := range cols {
			row[c] = plain(vals[i])
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, sqliteErr(path, err)
	}
	return out, nil
}

// sqliteErr names the query's database, and the byte cap when SQLite refused a value over it.
func sqliteErr(path string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_TOOBIG {
		return fmt.Errorf("query %s: a value is %w", path, tooManyBytes())
	}
	return fmt.Errorf("query %s: %w", path, err)
}

// valueSize is what a scanned value holds in memory, near enough for the byte cap.
func valueSize(v any) int64 {
	switch x := v.(type) {
	case []byte:
		return int64(len(x))
	case string:
		return int64(len(x))
	}
	return 8
}

// sqliteDSN is the URI that opens path read-only with a bounded wait for locks. The path goes
// in a file: URI (escaped, so a ? or # in it stays part of the name) because only there does
// SQLite apply mode=ro; a plain name would open read-write and create a missing file.
func sqliteDSN(path string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), OmitHost: true}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", fmt.Sprint(sqliteBusy.Milliseconds()))
	u.RawQuery = q.Encode()
	return u.String()
}
