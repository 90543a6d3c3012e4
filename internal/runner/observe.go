package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/sink"
)

// sinks are the recording servers of one run, keyed like services by (file, name).
type sinks struct {
	byKey map[string]*runningSink
}

type runningSink struct {
	def  *scenario.Sink
	s    *sink.Sink
	lock sync.Mutex // held by the scenario using the sink, so recordings are its own
}

func sinkKey(s *scenario.Sink) string { return s.Config + "\x00" + s.Name }

// startSinks starts every sink of the scenarios once. On error the ones started are closed.
func startSinks(list []*scenario.Scenario) (*sinks, error) {
	ss := &sinks{byKey: map[string]*runningSink{}}
	for _, sc := range list {
		for _, def := range sc.Sinks {
			k := sinkKey(def)
			if ss.byKey[k] != nil {
				continue
			}
			cfg := sink.Config{Name: def.Name, Port: def.Port, Render: renderBody}
			if def.KeyHeader != "" {
				cfg.KeyHeaders = []string{"Idempotency-Key", def.KeyHeader}
			}
			for _, r := range def.Routes {
				cfg.Routes = append(cfg.Routes, sink.Route{
					Name: r.Name, Method: r.Method, Path: r.Path, Status: r.Status, Body: r.JSON, Headers: r.Headers,
					Delay: r.Delay, FailFirst: r.FailFirst, HangFirst: r.HangFirst, DropResponseFirst: r.DropResponseFirst,
				})
			}
			s, err := sink.Start(cfg)
			if err != nil {
				ss.close()
				return nil, fmt.Errorf("%w (%s)", err, def.Pos)
			}
			ss.byKey[k] = &runningSink{def: def, s: s}
		}
	}
	return ss, nil
}

func renderBody(body any, vars map[string]any) (any, error) { return render(body, vars) }

func (ss *sinks) close() {
	if ss == nil {
		return
	}
	for _, s := range ss.byKey {
		s.s.Close()
	}
}

// of returns the running sinks of a scenario, sorted by key so locks are always taken in order.
func (ss *sinks) of(sc *scenario.Scenario) []*runningSink {
	var out []*runningSink
	for _, def := range sc.Sinks {
		if s := ss.byKey[sinkKey(def)]; s != nil {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return sinkKey(out[i].def) < sinkKey(out[j].def) })
	return out
}

// urls is the sinks part of a scenario's template environment: sinks.NAME.url and .port.
func (ss *sinks) urls(sc *scenario.Scenario) map[string]any {
	out := map[string]any{}
	if ss == nil {
		return out
	}
	for name, def := range sc.Sinks {
		s := ss.byKey[sinkKey(def)]
		if s == nil {
			continue
		}
		u := s.s.URL()
		out[name] = map[string]any{"url": u, "port": u[strings.LastIndexByte(u, ':')+1:]}
	}
	return out
}

// probes holds the connections probes reuse during a run, each made under the outbound policy
// of the scenario that asked (so they are keyed by its allowed hosts too).
type probes struct {
	mu    sync.Mutex
	pg    map[string]*pgxpool.Pool
	redis map[string]*redis.Client
	http  map[string]*http.Client
}

func newProbes() *probes {
	return &probes{pg: map[string]*pgxpool.Pool{}, redis: map[string]*redis.Client{}, http: map[string]*http.Client{}}
}

func policyKey(allow []string) string { return strings.Join(allow, "\x00") }

// httpClient is the probes' HTTP client under the policy: it never follows a redirect.
func (p *probes) httpClient(allow []string) *http.Client {
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

func (p *probes) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, db := range p.pg {
		db.Close()
	}
	for _, c := range p.redis {
		c.Close()
	}
}

// observe refreshes the sinks and the probes an expression uses in the trial's environment.
// A probe that fails leaves its error as its value and returns it.
func (r *runner) observe(ctx context.Context, st *trialState, uses func(string) bool) error {
	for _, s := range r.sinks.of(st.sc) {
		st.env[s.def.Name] = s.s.Snapshot()
	}
	var errs []error
	for _, name := range sortedProbeNames(st.sc) {
		if !uses(name) {
			continue
		}
		v, err := r.probe(ctx, st, st.sc.Probes[name])
		if err != nil {
			err = fmt.Errorf("probe %s: %w", name, err)
			errs = append(errs, err)
			st.env[name] = nil
			continue
		}
		st.env[name] = v
	}
	return errors.Join(errs...)
}

func sortedProbeNames(sc *scenario.Scenario) []string {
	names := make([]string, 0, len(sc.Probes))
	for n := range sc.Probes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (r *runner) probeEnv(st *trialState) map[string]any {
	env := r.templateEnv(st.sc)
	env["session"], env["trial"] = st.env["session"], st.env["trial"]
	return env
}

func evalText(t *assert.Template, env map[string]any) (string, error) {
	v, err := t.Eval(env)
	if err != nil {
		return "", err
	}
	return assert.Text(v), nil
}

func (r *runner) probe(ctx context.Context, st *trialState, p *scenario.Probe) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	env := r.probeEnv(st)
	switch {
	case p.HTTP != nil:
		u, err := evalText(p.HTTP.URL, env)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, p.HTTP.Method, u, nil)
		if err != nil {
			return nil, err
		}
		for k, t := range p.HTTP.Headers {
			v, err := evalText(t, env)
			if err != nil {
				return nil, err
			}
			req.Header.Set(k, v)
		}
		resp, err := r.probes.httpClient(st.sc.AllowHosts).Do(req)
		var re *netguard.RedirectError
		if errors.As(err, &re) {
			// net/http names the redirect's target as if it had been requested: it was not.
			return nil, fmt.Errorf("%s %s: %w", p.HTTP.Method, u, re)
		}
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 10<<20))
		if err != nil {
			return nil, err
		}
		if resp.StatusCode/100 != 2 {
			return nil, fmt.Errorf("%s %s answered %s", p.HTTP.Method, u, resp.Status)
		}
		var v any
		if json.Unmarshal(body, &v) == nil {
			return v, nil
		}
		return string(body), nil
	case p.CallTool != nil:
		name := st.sc.ProbeEndpoint(p)
		ep, def, err := r.endpoint(st.sc, name)
		if err != nil {
			return nil, err
		}
		if mutating, err := r.mutating(ctx, ep, def, p.CallTool.Tool); err != nil {
			return nil, err
		} else if mutating {
			return nil, fmt.Errorf("%s is a mutating tool of endpoint %s (not readOnlyHint); a probe must not change anything", p.CallTool.Tool, name)
		}
		args, err := render(p.CallTool.Args, env)
		if err != nil {
			return nil, err
		}
		m, _ := args.(map[string]any)
		res := ep.Call(ctx, endpoint.Request{Tool: p.CallTool.Tool, Args: m})
		if res.Outcome != endpoint.OK {
			return nil, fmt.Errorf("%s: %s %s", p.CallTool.Tool, res.Outcome, res.Error)
		}
		return res.Result, nil
	case p.SQL != nil:
		dsn, err := evalText(p.SQL.DSN, env)
		if err != nil {
			return nil, err
		}
		args := make([]any, len(p.SQL.Args))
		for i, t := range p.SQL.Args {
			if args[i], err = t.Eval(env); err != nil {
				return nil, err
			}
		}
		db, err := r.probes.pool(ctx, dsn, st.sc.AllowHosts)
		if err != nil {
			return nil, err
		}
		rows, err := db.Query(ctx, p.SQL.Query, args...)
		if err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		defer rows.Close()
		out := []any{}
		fields := rows.FieldDescriptions()
		for rows.Next() {
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
		return out, rows.Err()
	case p.Redis != nil:
		addr, err := evalText(p.Redis.Addr, env)
		if err != nil {
			return nil, err
		}
		args := make([]any, len(p.Redis.Command))
		for i, t := range p.Redis.Command {
			if args[i], err = evalText(t, env); err != nil {
				return nil, err
			}
		}
		v, err := r.probes.client(addr, st.sc.AllowHosts).Do(ctx, args...).Result()
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return plain(v), nil
	}
	return nil, errors.New("empty probe")
}

func (p *probes) pool(ctx context.Context, dsn string, allow []string) (*pgxpool.Pool, error) {
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
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dsn, err)
	}
	p.pg[k] = db
	return db, nil
}

func (p *probes) client(addr string, allow []string) *redis.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := policyKey(allow) + "\x01" + addr
	if c, ok := p.redis[k]; ok {
		return c
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 2 * time.Second, Dialer: netguard.New(allow).DialContext})
	p.redis[k] = c
	return c
}

// plain turns driver values into what assertions compare: numbers, strings, lists, maps.
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
