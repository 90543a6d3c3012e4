package probe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/testenv"
)

// tmpl compiles a probe setting; env names what its {{ }} parts may use.
func tmpl(t *testing.T, s string, env assert.Env) *assert.Template {
	t.Helper()
	tp, err := assert.CompileTemplate(s, env)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func tmpls(t *testing.T, ss ...string) []*assert.Template {
	out := make([]*assert.Template, len(ss))
	for i, s := range ss {
		out[i] = tmpl(t, s, nil)
	}
	return out
}

func noTools(context.Context, *scenario.Scenario, *scenario.Probe, map[string]any) (any, error) {
	panic("no call_tool probe here")
}

// TestDatabaseProbes runs probes against the real Redis and PostgreSQL: replies and rows come
// back as the plain values assertions compare, and a connection is made once per target.
func TestDatabaseProbes(t *testing.T) {
	const redisAddr, pgAddr = "127.0.0.1:6379", "127.0.0.1:5432"
	const dsn = "postgres://" + pgAddr + "/test"
	key := "idemtest-probe-test:" + t.Name()
	for _, tc := range []struct {
		name    string
		service string
		addr    string
		probe   *scenario.Probe
		want    any
	}{
		{"redis element", "Redis", redisAddr,
			&scenario.Probe{Redis: &scenario.RedisProbe{Addr: tmpl(t, redisAddr, nil), Command: tmpls(t, "LINDEX", key, "0")}},
			"first"},
		{"redis list", "Redis", redisAddr,
			&scenario.Probe{Redis: &scenario.RedisProbe{Addr: tmpl(t, redisAddr, nil), Command: tmpls(t, "LRANGE", key, "0", "-1")}},
			[]any{"first", "second"}},
		{"redis missing key", "Redis", redisAddr,
			&scenario.Probe{Redis: &scenario.RedisProbe{Addr: tmpl(t, redisAddr, nil), Command: tmpls(t, "GET", key+":missing")}},
			nil},
		{"sql row", "PostgreSQL", pgAddr,
			&scenario.Probe{SQL: &scenario.SQLProbe{DSN: tmpl(t, dsn, nil),
				Query: "select $1::int as n, 'x'::text as s, 1.5::numeric as d, '2024-01-02T03:04:05Z'::timestamptz as t, null as z",
				Args:  []*assert.Template{tmpl(t, "{{ 7 }}", nil)}}},
			[]any{map[string]any{"n": 7, "s": "x", "d": 1.5, "t": "2024-01-02T03:04:05Z", "z": nil}}},
		{"sql no rows", "PostgreSQL", pgAddr,
			&scenario.Probe{SQL: &scenario.SQLProbe{DSN: tmpl(t, dsn, nil), Query: "select 1 where false"}},
			[]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.NeedService(t, tc.service, tc.addr)
			ctx := context.Background()
			if tc.probe.Redis != nil {
				c := redis.NewClient(&redis.Options{Addr: redisAddr})
				t.Cleanup(func() { c.Close() })
				if err := c.Del(ctx, key).Err(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Del(context.Background(), key) })
				if err := c.RPush(ctx, key, "first", "second").Err(); err != nil {
					t.Fatal(err)
				}
			}
			p := New(noTools)
			defer p.Close()
			sc := &scenario.Scenario{Probes: map[string]*scenario.Probe{"p": tc.probe}}
			for range 2 {
				got, err := p.Eval(ctx, sc, tc.probe, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %#v, want %#v", got, tc.want)
				}
			}
			if n := len(p.pg) + len(p.redis); n != 1 {
				t.Errorf("%d connection pools for one target", n)
			}
		})
	}
}

// TestProbeRedirectsAreNotFollowed: an HTTP probe answered with a redirect fails naming it,
// and nothing is sent to where it points.
func TestProbeRedirectsAreNotFollowed(t *testing.T) {
	var followed atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { followed.Add(1) }))
	t.Cleanup(target.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/ledger", http.StatusFound)
	}))
	t.Cleanup(redirecting.Close)
	pr := &scenario.Probe{HTTP: &scenario.HTTPProbe{Method: "GET", URL: tmpl(t, redirecting.URL+"/ledger", nil),
		Headers: map[string]*assert.Template{"Authorization": tmpl(t, "Bearer SECRET", nil)}}}
	p := New(noTools)
	defer p.Close()
	_, err := p.Eval(context.Background(), &scenario.Scenario{}, pr, nil)
	if err == nil || !strings.Contains(err.Error(), "redirected (302) to "+target.URL+"/ledger") {
		t.Fatalf("error %v, want the redirect named", err)
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("the redirect target received %d requests", n)
	}
}

// TestCheck: a probe whose rendered target is not loopback and not allowed is refused before
// any call, by name; an allowed one passes, and one that cannot be rendered yet waits until it
// is used.
func TestCheck(t *testing.T) {
	env := assert.Names("services")
	for _, tc := range []struct {
		name  string
		probe *scenario.Probe
		allow []string
		want  string
	}{
		{"http", &scenario.Probe{HTTP: &scenario.HTTPProbe{URL: tmpl(t, "http://10.0.0.1:8080/ledger", env)}}, nil,
			"probe p: host 10.0.0.1 is not loopback and not in allow_hosts; allow it with allow_hosts or --allow-host 10.0.0.1"},
		{"redis", &scenario.Probe{Redis: &scenario.RedisProbe{Addr: tmpl(t, "10.0.0.2:6379", env)}}, nil,
			"probe p: host 10.0.0.2 is not loopback"},
		{"sql fallback", &scenario.Probe{SQL: &scenario.SQLProbe{DSN: tmpl(t, "postgres://127.0.0.1:5432,10.0.0.3:5432/test", env)}}, nil,
			"probe p: host 10.0.0.3 is not loopback"},
		{"sql socket", &scenario.Probe{SQL: &scenario.SQLProbe{DSN: tmpl(t, "host=/var/run/postgresql dbname=test", env)}}, nil, ""},
		{"allowed", &scenario.Probe{HTTP: &scenario.HTTPProbe{URL: tmpl(t, "http://10.0.0.1:8080/ledger", env)}}, []string{"10.0.0.1"}, ""},
		{"loopback", &scenario.Probe{Redis: &scenario.RedisProbe{Addr: tmpl(t, "127.0.0.1:6379", env)}}, nil, ""},
		{"not rendered yet", &scenario.Probe{HTTP: &scenario.HTTPProbe{URL: tmpl(t, "http://{{ services.x.host }}/", env)}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &scenario.Scenario{AllowHosts: tc.allow, Probes: map[string]*scenario.Probe{"p": tc.probe}}
			refused, err := Check(sc, map[string]any{})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || refused != tc.probe):
				t.Fatalf("refused %v, error %v; want %q", refused, err, tc.want)
			}
		})
	}
}
