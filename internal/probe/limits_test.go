package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/testenv"
)

const pgDSN = "postgres://127.0.0.1:5432/test"

// pgTable creates a table of n rows, dropped at the end of t, and returns its name.
func pgTable(t *testing.T, n int) string {
	t.Helper()
	testenv.NeedService(t, "PostgreSQL", "127.0.0.1:5432")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	name := fmt.Sprintf("idemtest_probe_%d", os.Getpid())
	for _, q := range []string{
		"drop table if exists " + name,
		"create table " + name + " (id int primary key)",
		fmt.Sprintf("insert into %s select generate_series(1, %d)", name, n),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { conn.Exec(context.Background(), "drop table if exists "+name) })
	return name
}

func countRows(t *testing.T, table string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "select count(*) from "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSQLProbeReadOnly: were the loader's check of the query's text bypassed, the read-only
// transaction the probe runs in still refuses every write, and the rows stay.
func TestSQLProbeReadOnly(t *testing.T) {
	table := pgTable(t, 3)
	p := New(noTools)
	defer p.Close()
	for _, q := range []string{
		"delete from " + table + " returning *",
		"with d as (delete from " + table + " returning *) select * from d",
		"update " + table + " set id = id + 10 returning id",
		"insert into " + table + " values (99) returning id",
		"select * into idemtest_probe_copy from " + table,
		"select * from " + table + " for update",
		"select nextval('idemtest_no_such_seq')",
	} {
		t.Run(q, func(t *testing.T) {
			pr := &scenario.Probe{SQL: &scenario.SQLProbe{DSN: tmpl(t, pgDSN, nil), Query: q}}
			v, err := p.Eval(context.Background(), &scenario.Scenario{}, pr, nil)
			if err == nil {
				t.Fatalf("the write ran: %v", v)
			}
			if !strings.Contains(err.Error(), "read-only transaction") && !strings.Contains(err.Error(), "does not exist") {
				t.Errorf("err = %v, want the read-only transaction's refusal", err)
			}
		})
	}
	if n := countRows(t, table); n != 3 {
		t.Errorf("%d rows after the refused writes, want 3", n)
	}
	// The rolled back transactions left a pool that still answers.
	pr := &scenario.Probe{SQL: &scenario.SQLProbe{DSN: tmpl(t, pgDSN, nil), Query: "select count(*) as n from " + table}}
	if v, err := p.Eval(context.Background(), &scenario.Scenario{}, pr, nil); err != nil || fmt.Sprint(v) != "[map[n:3]]" {
		t.Errorf("after the refusals: %v, %v", v, err)
	}
}

// TestProbeCaps: every kind of probe that reads more than MaxRows rows or MaxBytes bytes is a
// probe error naming the cap, and one under the caps reads as before.
func TestProbeCaps(t *testing.T) {
	defer func(r int, b int64) { MaxRows, MaxBytes = r, b }(MaxRows, MaxBytes)
	MaxRows, MaxBytes = 50, 1<<20
	big := strings.Repeat("x", 2<<20)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			fmt.Fprintf(w, "%q", big)
		case "/many":
			fmt.Fprint(w, "["+strings.TrimSuffix(strings.Repeat("1,", 51), ",")+"]")
		default:
			fmt.Fprint(w, `[1, 2]`)
		}
	}))
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "many.jsonl"), []byte(strings.Repeat("{}\n", 51)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.json"), []byte(fmt.Sprintf("%q", big)), 0o644); err != nil {
		t.Fatal(err)
	}

	redisKey := "idemtest-probe-caps:" + fmt.Sprint(os.Getpid())
	tools := func(_ context.Context, _ *scenario.Scenario, pr *scenario.Probe, _ map[string]any) (any, error) {
		switch pr.CallTool.Tool {
		case "many":
			return make([]any, 51), nil
		case "big":
			return map[string]any{"s": big}, nil
		}
		return []any{1.0}, nil
	}
	sqlProbe := func(q string) *scenario.Probe {
		return &scenario.Probe{SQL: &scenario.SQLProbe{DSN: tmpl(t, pgDSN, nil), Query: q}}
	}
	redisProbe := func(cmd ...string) *scenario.Probe {
		return &scenario.Probe{Redis: &scenario.RedisProbe{Addr: tmpl(t, "127.0.0.1:6379", nil), Command: tmpls(t, cmd...)}}
	}
	fileProbe := func(path, format string) *scenario.Probe {
		return &scenario.Probe{File: &scenario.FileProbe{Path: tmpl(t, path, nil), Dir: dir, Format: format}}
	}
	for _, tc := range []struct {
		name, service string
		probe         *scenario.Probe
		want          string // "" for a value read whole
	}{
		{"sql under the caps", "PostgreSQL", sqlProbe("select generate_series(1, 50) as n"), ""},
		{"sql rows", "PostgreSQL", sqlProbe("select generate_series(1, 51) as n"), "more than 50 rows"},
		{"sql bytes of many rows", "PostgreSQL", sqlProbe("select repeat('x', 100000) as s from generate_series(1, 20)"), "over 1 MiB"},
		{"sql one value over the cap", "PostgreSQL", sqlProbe("select repeat('x', 3000000) as s"), "over 1 MiB"},
		{"redis under the caps", "Redis", redisProbe("LRANGE", redisKey+":list", "0", "49"), ""},
		{"redis rows", "Redis", redisProbe("LRANGE", redisKey+":list", "0", "-1"), "more than 50 rows"},
		{"redis bytes", "Redis", redisProbe("GET", redisKey+":big"), "over 1 MiB"},
		{"http under the caps", "", &scenario.Probe{HTTP: &scenario.HTTPProbe{Method: "GET", URL: tmpl(t, srv.URL+"/", nil)}}, ""},
		{"http rows", "", &scenario.Probe{HTTP: &scenario.HTTPProbe{Method: "GET", URL: tmpl(t, srv.URL+"/many", nil)}}, "more than 50 rows"},
		{"http bytes", "", &scenario.Probe{HTTP: &scenario.HTTPProbe{Method: "GET", URL: tmpl(t, srv.URL+"/big", nil)}}, "over 1 MiB"},
		{"call_tool under the caps", "", &scenario.Probe{CallTool: &scenario.ToolProbe{Tool: "small"}}, ""},
		{"call_tool rows", "", &scenario.Probe{CallTool: &scenario.ToolProbe{Tool: "many"}}, "more than 50 rows"},
		{"call_tool bytes", "", &scenario.Probe{CallTool: &scenario.ToolProbe{Tool: "big"}}, "over 1 MiB"},
		{"jsonl rows", "", fileProbe("many.jsonl", scenario.FileJSONLines), "more than 50 rows"},
		{"json bytes", "", fileProbe("big.json", scenario.FileJSON), "over 1 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.service == "PostgreSQL" {
				testenv.NeedService(t, tc.service, "127.0.0.1:5432")
			}
			if tc.service == "Redis" {
				testenv.NeedService(t, tc.service, "127.0.0.1:6379")
				c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
				defer c.Close()
				list := make([]any, 51)
				for i := range list {
					list[i] = i
				}
				if err := c.RPush(ctx, redisKey+":list", list...).Err(); err != nil {
					t.Fatal(err)
				}
				if err := c.Set(ctx, redisKey+":big", big, 0).Err(); err != nil {
					t.Fatal(err)
				}
				defer c.Del(context.Background(), redisKey+":list", redisKey+":big")
			}
			p := New(tools)
			defer p.Close()
			sc := &scenario.Scenario{}
			// Twice: a probe refused over a cap leaves its connection fit for the next (a Redis
			// reply cut short is not read as the next one's).
			for range 2 {
				v, err := p.Eval(ctx, sc, tc.probe, nil)
				switch {
				case tc.want == "" && err != nil:
					t.Fatal(err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Fatalf("err = %v (value of %d bytes), want one containing %q", err, len(fmt.Sprint(v)), tc.want)
				}
			}
			if tc.service == "Redis" {
				if v, err := p.Eval(ctx, sc, redisProbe("LINDEX", redisKey+":list", "0"), nil); err != nil || v != "0" {
					t.Errorf("the next command on the connection: %v, %v", v, err)
				}
			}
		})
	}
}
