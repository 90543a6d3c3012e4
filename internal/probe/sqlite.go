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
	_ "modernc.org/sqlite"

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
	rows, err := db.QueryContext(ctx, fp.Query, args...)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", path, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := []any{}
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
			return nil, fmt.Errorf("query %s: %w", path, err)
		}
		row := make(map[string]any, len(cols))
		for i, c := range cols {
			row[c] = plain(vals[i])
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query %s: %w", path, err)
	}
	return out, nil
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
