package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/scenario"
)

// Prober evaluates probes and holds the connections they reuse during a run, each made under
// the outbound policy of the scenario that asked (so they are keyed by its allowed hosts too).
type Prober struct {
	mu    sync.Mutex
	pg    map[string]*pgxpool.Pool
	redis map[string]*redis.Client
	http  map[string]*http.Client
	tools ToolCaller
}

// ToolCaller evaluates a call_tool probe: the call goes through the scenario's endpoint, which
// the runner owns, and a mutating tool is refused there. env is the probe's template
// environment.
type ToolCaller func(ctx context.Context, sc *scenario.Scenario, p *scenario.Probe, env map[string]any) (any, error)

// New returns a Prober with no connections yet; tools answers its call_tool probes.
func New(tools ToolCaller) *Prober {
	return &Prober{pg: map[string]*pgxpool.Pool{}, redis: map[string]*redis.Client{}, http: map[string]*http.Client{}, tools: tools}
}

func policyKey(allow []string) string { return strings.Join(allow, "\x00") }

// httpClient is the probes' HTTP client under the policy: it never follows a redirect.
func (p *Prober) httpClient(allow []string) *http.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := policyKey(allow)
	if c, ok := p.http[k]; ok {
		return c
	}
	c := netguard.New(allow).Client(10 * time.Second)
	p.http[k] = c
	return c
}

// Close closes the probes' database and Redis connections.
func (p *Prober) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, db := range p.pg {
		db.Close()
	}
	for _, c := range p.redis {
		c.Close()
	}
}

// Names are the names of the scenario's probes, sorted: probes are evaluated, and their errors
// reported, in this order.
func Names(sc *scenario.Scenario) []string {
	names := make([]string, 0, len(sc.Probes))
	for n := range sc.Probes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func evalText(t *assert.Template, env map[string]any) (string, error) {
	v, err := t.Eval(env)
	if err != nil {
		return "", err
	}
	return assert.Text(v), nil
}

// Eval evaluates probe pr of scenario sc with its templates rendered in env, under the
// scenario's outbound policy, within 10 seconds, reading at most MaxRows rows and MaxBytes
// bytes.
func (p *Prober) Eval(ctx context.Context, sc *scenario.Scenario, pr *scenario.Probe, env map[string]any) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := p.eval(ctx, sc, pr, env)
	if err == nil {
		err = capValue(v)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (p *Prober) eval(ctx context.Context, sc *scenario.Scenario, pr *scenario.Probe, env map[string]any) (any, error) {
	switch {
	case pr.HTTP != nil:
		return p.evalHTTP(ctx, pr.HTTP, env, sc.AllowHosts)
	case pr.CallTool != nil:
		v, err := p.tools(ctx, sc, pr, env)
		if err == nil {
			err = capAnswer(v)
		}
		return v, err
	case pr.SQL != nil:
		return p.evalSQL(ctx, pr.SQL, env, sc.AllowHosts)
	case pr.Redis != nil:
		return p.evalRedis(ctx, pr.Redis, env, sc.AllowHosts)
	case pr.File != nil:
		return evalFile(ctx, pr.File, env)
	}
	return nil, errors.New("empty probe")
}

// evalHTTP reads a URL; a JSON body is decoded, any other is its text.
func (p *Prober) evalHTTP(ctx context.Context, h *scenario.HTTPProbe, env map[string]any, allow []string) (any, error) {
	u, err := evalText(h.URL, env)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, h.Method, u, nil)
	if err != nil {
		return nil, err
	}
	for k, t := range h.Headers {
		v, err := evalText(t, env)
		if err != nil {
			return nil, err
		}
		req.Header.Set(k, v)
	}
	resp, err := p.httpClient(allow).Do(req)
	var re *netguard.RedirectError
	if errors.As(err, &re) {
		// net/http names the redirect's target as if it had been requested: it was not.
		return nil, fmt.Errorf("%s %s: %w", h.Method, u, re)
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > MaxBytes {
		return nil, fmt.Errorf("%s %s: the body is %w", h.Method, u, tooManyBytes())
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s answered %s", h.Method, u, resp.Status)
	}
	var v any
	if json.Unmarshal(body, &v) == nil {
		return v, nil
	}
	return string(body), nil
}

// evalSQL runs a query on PostgreSQL; its value is the list of rows, each a map. The query runs
// in a READ ONLY transaction, rolled back after: that, not the loader's check of its text, is
// what keeps a probe from writing. Its rows are read up to MaxRows and MaxBytes, and the
// server ends the statement at the probe's deadline too.
func (p *Prober) evalSQL(ctx context.Context, q *scenario.SQLProbe, env map[string]any, allow []string) (any, error) {
	dsn, err := evalText(q.DSN, env)
	if err != nil {
		return nil, err
	}
	args := make([]any, len(q.Args))
	for i, t := range q.Args {
		if args[i], err = t.Eval(env); err != nil {
			return nil, err
		}
	}
	db, err := p.pool(ctx, dsn, allow)
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	// The rollback runs when ctx has ended too: it gives the connection back to the pool.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if dl, ok := ctx.Deadline(); ok {
		// Should the cancel request not reach the server, it still ends the statement.
		ms := max(time.Until(dl).Milliseconds(), 1)
		if _, err := tx.Exec(ctx, fmt.Sprintf("set local statement_timeout = %d", ms)); err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
	}
	out, err := readRows(tx, ctx, q.Query, args)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	return out, nil
}

// readRows runs query in tx and reads its rows, each a map, up to MaxRows rows and MaxBytes
// bytes of values (a single value over MaxBytes is refused by the connection as it arrives).
func readRows(tx pgx.Tx, ctx context.Context, query string, args []any) ([]any, error) {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []any{}
	fields := rows.FieldDescriptions()
	var size int64
	for rows.Next() {
		if len(out) == MaxRows {
			return nil, tooManyRows()
		}
		for _, raw := range rows.RawValues() {
			size += int64(len(raw))
		}
		if size > MaxBytes {
			return nil, tooManyBytes()
		}
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		row := map[string]any{}
		for i, f := range fields {
			row[f.Name] = plain(vals[i])
		}
		out = append(out, row)
	}
	err = rows.Err()
	var big *pgproto3.ExceededMaxBodyLenErr
	if errors.As(err, &big) {
		return nil, tooManyBytes()
	}
	return out, err
}

// evalRedis runs a Redis command; its value is the reply (nil for a missing key).
func (p *Prober) evalRedis(ctx context.Context, r *scenario.RedisProbe, env map[string]any, allow []string) (any, error) {
	addr, err := evalText(r.Addr, env)
	if err != nil {
		return nil, err
	}
	args := make([]any, len(r.Command))
	for i, t := range r.Command {
		if args[i], err = evalText(t, env); err != nil {
			return nil, err
		}
	}
	v, err := p.client(addr, allow).Do(ctx, args...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if isLimit(err) {
		return nil, fmt.Errorf("%s: the reply is %w", args[0], err)
	}
	if err != nil {
		return nil, err
	}
	return plain(v), nil
}

func (p *Prober) pool(ctx context.Context, dsn string, allow []string) (*pgxpool.Pool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := policyKey(allow) + "\x01" + dsn
	if db, ok := p.pg[k]; ok {
		return db, nil
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The DSN's password is hidden by the reports' redaction, like every secret.
		return nil, fmt.Errorf("open %s: %w", dsn, err)
	}
	policy := netguard.New(allow)
	cfg.ConnConfig.DialFunc = policy.DialContext
	cfg.ConnConfig.LookupFunc = policy.Lookup
	// A row over MaxBytes is refused as its message arrives, before it is held in memory.
	cfg.ConnConfig.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		f := pgproto3.NewFrontend(r, w)
		f.SetMaxBodyLen(int(MaxBytes) + 1<<10)
		return f
	}
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dsn, err)
	}
	p.pg[k] = db
	return db, nil
}

func (p *Prober) client(addr string, allow []string) *redis.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := policyKey(allow) + "\x01" + addr
	if c, ok := p.redis[k]; ok {
		return c
	}
	dial := netguard.New(allow).DialContext
	c := redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, DialTimeout: 2 * time.Second,
		// The probe's deadline bounds a reply being read, not only the default read timeout.
		ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &cappedConn{Conn: conn}, nil
		},
	})
	p.redis[k] = c
	return c
}

// plain turns driver values into what assertions compare: numbers, strings, lists, maps. It is
// not a jsonvalue walk: its input is a driver's (Redis's map[any]any, pgx's types), not JSON.
func plain(v any) any {
	switch x := v.(type) {
	case int64:
		return int(x)
	case int32:
		return int(x)
	case []byte:
		return string(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case map[any]any:
		out := map[string]any{}
		for k, e := range x {
			out[fmt.Sprint(k)] = plain(e)
		}
		return out
	case pgtype.Numeric:
		if f, err := x.Float64Value(); err == nil && f.Valid {
			return f.Float64
		}
	}
	return v
}
