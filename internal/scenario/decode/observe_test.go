package decode

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestService decodes a service with every field set, and one with only its command.
func TestService(t *testing.T) {
	c, errs := configOf(t, `services:
  api:
    command: [go, run, ./server, --addr, "127.0.0.1:{{ port }}", "--peer={{ services.db.port }}"]
    env: {SINK: "{{ sinks.hooks.url }}", REPLICA: "{{ replica }}"}
    dir: ../srv
    ready: {http: "http://127.0.0.1:{{ port }}/healthz", timeout: 5s}
    replicas: 3
  db:
    command: [db]
    ready: {log: "listening on .*"}
sinks:
  hooks: {routes: {r: {path: /r}}}
`)
	if len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	api, db := c.Services["api"], c.Services["db"]
	if api.Name != "api" || api.Pos.Line != 3 || api.Config != c.Path || len(api.Command) != 6 || api.Command[4].Source != "127.0.0.1:{{ port }}" || api.Replicas != 3 {
		t.Errorf("api %+v", api)
	}
	if api.Env["SINK"].Source != "{{ sinks.hooks.url }}" || api.Dir != filepath.Join(filepath.Dir(c.Path), "../srv") {
		t.Errorf("api env %v dir %q", api.Env, api.Dir)
	}
	if api.Ready.HTTP.Source != "http://127.0.0.1:{{ port }}/healthz" || api.Ready.Timeout != 5*time.Second || api.Ready.TCP != nil || api.Ready.Log != nil {
		t.Errorf("api ready %+v", api.Ready)
	}
	if db.Replicas != 1 || db.Ready.Log.String() != "listening on .*" || db.Ready.Timeout != 60*time.Second || db.Env != nil || db.Dir != "" {
		t.Errorf("db defaults %+v", db)
	}
}

// TestServiceErrors: each bad service field is reported at its value.
func TestServiceErrors(t *testing.T) {
	checkBad(t, []badCase{
		{name: "not a mapping", src: "services:\n  api: [go, run]\n",
			want: []string{"2:8: service api must be a mapping (key: value lines), got a list"}},
		{name: "no command", src: "services:\n  api: {dir: srv}\n",
			want: []string{"2:8: service api needs command:"}},
		{name: "command a string", src: "services:\n  api: {command: go run .}\n",
			want: []string{"2:18: command must be a list of strings"}},
		{name: "command empty", src: "services:\n  api: {command: []}\n",
			want: []string{"2:18: command is empty"}},
		{name: "command template with an unknown name", src: "services:\n  api: {command: [x, \"{{ prot }}\"]}\n",
			want: []string{`2:26: command: unknown name prot (did you mean "port"?)`}},
		{name: "unknown field", src: "services:\n  api: {command: [x], replica: 2}\n",
			want: []string{`2:23: unknown field "replica" in service api (did you mean "replicas"?)`}},
		{name: "replicas zero", src: "services:\n  api: {command: [x], replicas: 0}\n",
			want: []string{"2:33: replicas is 0, out of range"}},
		{name: "replicas above the maximum", src: "services:\n  api: {command: [x], replicas: 65}\n",
			want: []string{"2:33: replicas is 65, out of range"}},
		{name: "env not a mapping", src: "services:\n  api: {command: [x], env: [A=1]}\n",
			want: []string{"2:28: env must be a mapping, got a list"}},
		{name: "env template with an unknown name", src: "services:\n  api: {command: [x], env: {A: \"{{ replika }}\"}}\n",
			want: []string{`2:36: env A: unknown name replika (did you mean "replica"?)`}},
		{name: "unknown sink", src: "services:\n  api: {command: [x], env: {A: \"{{ sinks.hoks.url }}\"}}\nsinks:\n  hooks: {routes: {r: {path: /r}}}\n",
			want: []string{`2:42: unknown sink "hoks" (did you mean "hooks"?)`}},
		{name: "ready two kinds", src: "services:\n  api: {command: [x], ready: {tcp: \"127.0.0.1:1\", log: up}}\n",
			want: []string{"2:30: ready takes one of http, tcp or log"}},
		{name: "ready unknown field", src: "services:\n  api: {command: [x], ready: {tpc: \"127.0.0.1:1\"}}\n",
			want: []string{`2:31: unknown field "tpc" in ready (did you mean "tcp"?)`}},
		{name: "ready log not a regular expression", src: "services:\n  api: {command: [x], ready: {log: \"[\"}}\n",
			want: []string{"2:36: ready.log: error parsing regexp: missing closing ]: `[`"}},
		{name: "ready http not a URL", src: "services:\n  api: {command: [x], ready: {http: \"127.0.0.1:{{ port }}\"}}\n",
			want: []string{`2:37: ready.http: "127.0.0.1:{{ port }}" is not a valid URL: first path segment in URL cannot contain colon`}},
		{name: "ready timeout negative", src: "services:\n  api: {command: [x], ready: {log: up, timeout: -1s}}\n",
			want: []string{"2:49: ready.timeout must not be negative, got -1s"}},
	}, configErrors)
}

// TestSink decodes a sink with every field set.
func TestSink(t *testing.T) {
	c, errs := configOf(t, `sinks:
  payments:
    port: 9099
    key_header: X-Request-Key
    routes:
      charge:
        method: post
        path: /v1/charges
        respond: {status: 201, json: {id: "ch_{{ seq }}", n: 1}, headers: {X-A: b}}
        delay: 5ms
        fail_first: 1
        hang_first: 2
        drop_response_first: 3
      plain: {path: /plain}
`)
	if len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	s := c.Sinks["payments"]
	if s.Name != "payments" || s.Pos.Line != 2 || s.Port != 9099 || s.KeyHeader != "X-Request-Key" || s.Config != c.Path || len(s.Routes) != 2 {
		t.Fatalf("sink %+v", s)
	}
	r, plain := s.Routes[0], s.Routes[1]
	if r.Name != "charge" || r.Method != "POST" || r.Path != "/v1/charges" || r.Status != 201 || r.Headers["X-A"] != "b" || r.Delay != 5*time.Millisecond {
		t.Errorf("route %+v", r)
	}
	if r.FailFirst != 1 || r.HangFirst != 2 || r.DropResponseFirst != 3 {
		t.Errorf("faults %d %d %d", r.FailFirst, r.HangFirst, r.DropResponseFirst)
	}
	if body := r.JSON.(map[string]any); body["n"] != 1 || body["id"] == "ch_{{ seq }}" {
		t.Errorf("json %#v: the template must be compiled", body)
	}
	if plain.Name != "plain" || plain.Method != "" || plain.Status != 200 || plain.JSON != nil || plain.FailFirst != 0 {
		t.Errorf("route defaults %+v", plain)
	}
}

// TestSinkErrors: each bad sink, route or fault is reported at its value.
func TestSinkErrors(t *testing.T) {
	route := func(fields string) string { return "sinks:\n  s:\n    routes:\n      r: {path: /r, " + fields + "}\n" }
	checkBad(t, []badCase{
		{name: "no routes", src: "sinks:\n  s: {port: 1}\n",
			want: []string{"2:6: sink s has no routes"}},
		{name: "routes not a mapping", src: "sinks:\n  s: {routes: [a]}\n",
			want: []string{"2:15: routes must be a mapping, got a list"}},
		{name: "a keyword as name", src: "sinks:\n  not: {routes: {r: {path: /r}}}\n",
			want: []string{`2:3: sink "not" is an expression keyword: assertions could not name it`}},
		{name: "unknown field", src: "sinks:\n  s: {routes: {r: {path: /r}}, key_hedaer: X}\n",
			want: []string{`2:32: unknown field "key_hedaer" in sink s (did you mean "key_header"?)`}},
		{name: "port out of range", src: "sinks:\n  s: {routes: {r: {path: /r}}, port: 65536}\n",
			want: []string{"2:38: port is 65536, out of range"}},
		{name: "port negative", src: "sinks:\n  s: {routes: {r: {path: /r}}, port: -1}\n",
			want: []string{"2:38: port is -1, out of range"}},
		{name: "route without path", src: "sinks:\n  s:\n    routes:\n      r: {method: POST}\n",
			want: []string{"4:10: route r needs path:"}},
		{name: "path without a slash", src: "sinks:\n  s:\n    routes:\n      r: {path: v1/r}\n",
			want: []string{`4:17: route r: path "v1/r" does not start with /`}},
		{name: "reserved route name", src: "sinks:\n  s:\n    routes:\n      requests: {path: /r}\n",
			want: []string{`4:7: route name "requests" is reserved (it lists all requests / the sink's URL)`}},
		{name: "route unknown field", src: route("fail_frist: 1"),
			want: []string{`4:21: unknown field "fail_frist" in route r (did you mean "fail_first"?)`}},
		{name: "respond unknown field", src: route("respond: {stauts: 500}"),
			want: []string{`4:31: unknown field "stauts" in respond (did you mean "status"?)`}},
		{name: "status below 100", src: route("respond: {status: 99}"),
			want: []string{"4:39: status is 99, out of range"}},
		{name: "status above 599", src: route("respond: {status: 600}"),
			want: []string{"4:39: status is 600, out of range"}},
		{name: "json template with an unknown name", src: route(`respond: {json: {id: "{{ sq }}"}}`),
			want: []string{`4:46: template: unknown name sq (did you mean "seq"?)`}},
		{name: "delay negative", src: route("delay: -1ms"),
			want: []string{"4:28: delay must not be negative, got -1ms"}},
		{name: "fail_first negative", src: route("fail_first: -1"),
			want: []string{"4:33: fail_first is -1, out of range"}},
		{name: "hang_first not a number", src: route("hang_first: many"),
			want: []string{`4:33: hang_first must be a whole number, got "many"`}},
		{name: "drop_response_first above the maximum", src: route("drop_response_first: 1000001"),
			want: []string{"4:42: drop_response_first is 1000001, out of range"}},
	}, configErrors)
}

// TestProbes decodes a probe of each kind.
func TestProbes(t *testing.T) {
	c, errs := configOf(t, `probes:
  ledger: {http: {url: "http://127.0.0.1:1/ledger?s={{ session }}", method: head, headers: {A: b}}}
  listed: {call_tool: list_refunds, endpoint: refunds, args: {accountId: "acct_{{ session }}"}}
  rows: {sql: {dsn: "postgres://127.0.0.1/db", query: "select count(*) as n from refunds where s = $1", args: ["{{ session }}"]}}
  idem_keys: {redis: {command: [keys, "idem:*"]}}
  state: {file: {path: data/state.db, format: sqlite, query: "select * from refunds where s = ?", args: ["{{ session }}"], optional: true}}
  doc: {file: {path: state.json}}
`)
	if len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	if len(c.Probes) != 6 {
		t.Fatalf("%d probes", len(c.Probes))
	}
	if h := c.Probes["ledger"].HTTP; h == nil || h.Method != "HEAD" || h.URL.Source != "http://127.0.0.1:1/ledger?s={{ session }}" || h.Headers["A"].Source != "b" {
		t.Errorf("http probe %+v", h)
	}
	if p := c.Probes["listed"]; p.CallTool == nil || p.CallTool.Tool != "list_refunds" || p.CallTool.Endpoint != "refunds" || p.HTTP != nil || p.Pos.Line != 3 || p.Pos.Col != 3 {
		t.Errorf("call_tool probe %+v", p)
	}
	if q := c.Probes["rows"].SQL; q == nil || q.DSN.Source != "postgres://127.0.0.1/db" || !strings.HasPrefix(q.Query, "select count") || len(q.Args) != 1 {
		t.Errorf("sql probe %+v", q)
	}
	if r := c.Probes["idem_keys"].Redis; r == nil || r.Addr.Source != "127.0.0.1:6379" || len(r.Command) != 2 || r.Command[1].Source != "idem:*" {
		t.Errorf("redis probe %+v", r)
	}
	if f := c.Probes["state"].File; f == nil || f.Format != "sqlite" || f.Path.Source != "data/state.db" || f.Dir != filepath.Dir(c.Path) || len(f.Args) != 1 || !f.Optional {
		t.Errorf("file probe %+v", f)
	}
	if f := c.Probes["doc"].File; f.Format != "json" || f.Optional || f.Query != "" {
		t.Errorf("file probe defaults %+v", f)
	}
}

// TestProbeErrors: a probe reads, so a write is refused when it loads; each bad field is reported
// at its value.
func TestProbeErrors(t *testing.T) {
	const url = `url: "http://127.0.0.1:1/x"`
	checkBad(t, []badCase{
		{name: "no kind", src: "probes:\n  p: {endpoint: e}\n",
			want: []string{"2:6: probe p needs exactly one of http, call_tool, sql, redis or file"}},
		{name: "two kinds", src: "probes:\n  p: {call_tool: t, http: {" + url + "}}\n",
			want: []string{"2:6: probe p needs exactly one of http, call_tool, sql, redis or file"}},
		{name: "unknown field", src: "probes:\n  p: {htp: {" + url + "}}\n",
			want: []string{"2:6: probe p needs exactly one of http, call_tool, sql, redis or file", `2:7: unknown field "htp" in probe p (did you mean "http"?)`}},
		{name: "a built-in function as name", src: "probes:\n  len: {http: {" + url + "}}\n",
			want: []string{`2:3: probe "len" is an expr built-in function (len(...)): assertions could not name it`}},
		{name: "an idemtest built-in as name", src: "probes:\n  keys: {redis: {command: [keys, \"*\"]}}\n",
			want: []string{`2:3: probe "keys" is an expr built-in function (keys(...)): assertions could not name it`}},
		{name: "http without url", src: "probes:\n  p: {http: {method: GET}}\n",
			want: []string{"2:13: http probe p needs url:"}},
		{name: "http method writes", src: "probes:\n  p: {http: {" + url + ", method: post}}\n",
			want: []string{"2:51: probe p: method POST is not read-only"}},
		{name: "http url template with an unknown name", src: "probes:\n  p: {http: {url: \"http://127.0.0.1:1/{{ sesion }}\"}}\n",
			want: []string{`2:42: url: unknown name sesion (did you mean "session"?)`}},
		{name: "endpoint beside http",
			src:  "probes:\n  p: {http: {" + url + "}, endpoint: e}\n",
			want: []string{"2:54: endpoint is only for a call_tool probe"}},
		{name: "call_tool args not a mapping",
			src:  "probes:\n  p: {call_tool: t, args: [1]}\n",
			want: []string{"2:27: args must be a mapping, got a list"}},
		{name: "sql without dsn and query", src: "probes:\n  p: {sql: {args: [1]}}\n",
			want: []string{"2:12: sql probe p needs dsn:", "2:12: sql probe p needs query:"}},
		{name: "sql unknown field", src: "probes:\n  p: {sql: {dns: x, query: select 1}}\n",
			want: []string{"2:12: sql probe p needs dsn:", `2:13: unknown field "dns" in sql probe (did you mean "dsn"?)`}},
		{name: "sql args not a list",
			src:  "probes:\n  p: {sql: {dsn: x, query: select 1, args: one}}\n",
			want: []string{"2:44: args must be a list, got \"one\""}},
		{name: "sql args a mapping", src: "probes:\n  p: {sql: {dsn: x, query: select 1, args: {a: \"{{ sesion }}\"}}}\n",
			want: []string{"2:44: args must be a list, got a mapping"}},
		{name: "redis without command", src: "probes:\n  p: {redis: {addr: \"127.0.0.1:1\"}}\n",
			want: []string{"2:14: redis probe p needs command: as a list"}},
		{name: "redis command writes", src: "probes:\n  p: {redis: {command: [set, k, v]}}\n",
			want: []string{"2:25: probe p: SET is not a read-only Redis command"}},
		{name: "file without path", src: "probes:\n  p: {file: {format: json}}\n",
			want: []string{"2:13: file probe p needs path:"}},
		{name: "file unknown format", src: "probes:\n  p: {file: {path: x, format: xml}}\n",
			want: []string{`2:31: file probe p: unknown format "xml"`}},
		{name: "file query without sqlite", src: "probes:\n  p: {file: {path: x, query: select 1}}\n",
			want: []string{"2:30: file probe p: a query is for format: sqlite"}},
		{name: "file sqlite without query", src: "probes:\n  p: {file: {path: x, format: sqlite}}\n",
			want: []string{"2:13: file probe p: format: sqlite needs query:"}},
		{name: "file sqlite query writes", src: "probes:\n  p: {file: {path: x, format: sqlite, query: delete from t}}\n",
			want: []string{`2:46: file probe p: "delete" is not a read-only query (only select, with … select or values)`}},
		{name: "file sqlite two statements", src: "probes:\n  p: {file: {path: x, format: sqlite, query: \"select 1; select 2\"}}\n",
			want: []string{"2:57: file probe p: the query holds more than one statement"}},
		{name: "sql delete returning", src: "probes:\n  p: {sql: {dsn: x, query: \"delete from t returning *\"}}\n",
			want: []string{`2:29: sql probe p: "delete" is not a read-only query (only select, with … select or values)`}},
		{name: "sql data-modifying cte", src: "probes:\n  p: {sql: {dsn: x, query: \"with d as (delete from t returning *) select * from d\"}}\n",
			want: []string{"2:40: sql probe p: DELETE writes: a probe only reads"}},
		{name: "sql two statements", src: "probes:\n  p: {sql: {dsn: x, query: \"select 1; delete from t\"}}\n",
			want: []string{"2:39: sql probe p: the query holds more than one statement"}},
		{name: "sql select into", src: "probes:\n  p: {sql: {dsn: x, query: \"select * into b from t\"}}\n",
			want: []string{"2:38: sql probe p: SELECT INTO writes: a probe only reads"}},
		{name: "sql for update", src: "probes:\n  p: {sql: {dsn: x, query: \"select * from t for update\"}}\n",
			want: []string{"2:45: sql probe p: FOR UPDATE locks rows: a probe only reads"}},
		{name: "sql write in a block scalar's second line", src: "probes:\n  p:\n    sql:\n      dsn: x\n      query: |\n        select 1;\n        delete from t\n",
			want: []string{"7:9: sql probe p: the query holds more than one statement"}},
		{name: "file args without sqlite", src: "probes:\n  p: {file: {path: x, args: [1]}}\n",
			want: []string{"2:29: file probe p: args are for format: sqlite"}},
		{name: "file optional not a boolean", src: "probes:\n  p: {file: {path: x, optional: maybe}}\n",
			want: []string{`2:33: optional must be true or false, got "maybe"`}},
	}, configErrors)
}
