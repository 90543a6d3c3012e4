package decode

import (
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/schema"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
	"github.com/idemtest/idemtest/internal/sqlread"
)

// sinkRespondEnv is what {{ }} in a sink's response may use.
func sinkRespondEnv() assert.Env {
	return assert.Env{"seq": 0, "body": assert.Dynamic, "params": map[string]any{}, "headers": map[string]any{}, "method": "", "path": ""}
}

// probeEnv is what {{ }} in a probe's settings may use: it is evaluated with the assertion.
func probeEnv() assert.Env {
	return assert.Env{"session": "", "trial": 0, "services": map[string]any{}, "sinks": map[string]any{}}
}

func (f *file) sink(k, n *yaml.Node, source string) *scenario.Sink {
	name := k.Value
	m, ok := f.fields(n, "sink "+name, schema.Sink)
	if !ok || !f.nameUsable(k, "sink", name, false) {
		return nil
	}
	s := &scenario.Sink{Name: name, Pos: f.Pos(k), Config: source}
	if v := m["port"]; v != nil {
		s.Port = f.Int(v, "port", 0, 65535)
	}
	if v := m["key_header"]; v != nil {
		s.KeyHeader = f.Str(v, "key_header")
	}
	if m["routes"] == nil {
		f.Errf(n, "add routes: {refunds: {method: POST, path: /v1/refunds}}", "sink %s has no routes", name)
		return s
	}
	for _, kv := range f.Entries(m["routes"], "routes") {
		rname := kv[0].Value
		switch rname {
		case "requests", "url":
			f.Errf(kv[0], "choose another route name", "route name %q is reserved (it lists all requests / the sink's URL)", rname)
			continue
		}
		rm, ok := f.fields(kv[1], "route "+rname, schema.Route)
		if !ok {
			continue
		}
		r := &scenario.SinkRoute{Name: rname, Status: 200}
		if v := rm["method"]; v != nil {
			r.Method = strings.ToUpper(f.Str(v, "method"))
		}
		if v := rm["path"]; v != nil {
			r.Path = f.Str(v, "path")
			if !strings.HasPrefix(r.Path, "/") {
				f.Errf(v, "paths start with /", "route %s: path %q does not start with /", rname, r.Path)
			}
		} else {
			f.Errf(kv[1], "add path: /v1/refunds", "route %s needs path:", rname)
		}
		if v := rm["respond"]; v != nil {
			if pm, ok := f.fields(v, "respond", schema.Respond); ok {
				if x := pm["status"]; x != nil {
					r.Status = f.Int(x, "status", 100, 599)
				}
				if x := pm["json"]; x != nil {
					f.NamesHint = []string{"seq", "body", "params", "headers", "method", "path"}
					r.JSON = f.args(x, sinkRespondEnv())
				}
				if x := pm["headers"]; x != nil {
					r.Headers = map[string]string{}
					for _, h := range f.Entries(x, "headers") {
						r.Headers[h[0].Value] = f.Str(h[1], "header "+h[0].Value)
					}
				}
			}
		}
		if v := rm["delay"]; v != nil {
			r.Delay = f.Duration(v, "delay")
		}
		if v := rm["fail_first"]; v != nil {
			r.FailFirst = f.Int(v, "fail_first", 0, 1000000)
		}
		if v := rm["hang_first"]; v != nil {
			r.HangFirst = f.Int(v, "hang_first", 0, 1000000)
		}
		if v := rm["drop_response_first"]; v != nil {
			r.DropResponseFirst = f.Int(v, "drop_response_first", 0, 1000000)
		}
		s.Routes = append(s.Routes, r)
	}
	return s
}

func (f *file) probe(k, n *yaml.Node, source string) *scenario.Probe {
	name := k.Value
	m, ok := f.fields(n, "probe "+name, schema.Probe)
	if !ok || !f.nameUsable(k, "probe", name, true) {
		return nil
	}
	p := &scenario.Probe{Name: name, Pos: f.Pos(k), Config: source}
	kinds := 0
	for _, kind := range []string{"http", "call_tool", "sql", "redis", "file"} {
		if m[kind] != nil {
			kinds++
		}
	}
	if kinds != 1 {
		f.Errf(n, "a probe is one of http, call_tool, sql, redis or file", "probe %s needs exactly one of http, call_tool, sql, redis or file", name)
		return nil
	}
	f.NamesHint = []string{"session", "trial", "services.NAME.port", "sinks.NAME.url"}
	env := probeEnv()
	if m["call_tool"] == nil {
		// endpoint: and args: beside the kind are a call_tool probe's; elsewhere they would be
		// accepted and never used.
		for _, k := range []string{"endpoint", "args"} {
			if v := m[k]; v != nil {
				f.Errf(v, "move it into the kind's own settings, or make this a call_tool probe", "%s is only for a call_tool probe", k)
			}
		}
	}
	switch {
	case m["http"] != nil:
		hm, ok := f.fields(m["http"], "http probe", schema.HTTPProbe)
		if !ok {
			return nil
		}
		h := &scenario.HTTPProbe{Method: "GET"}
		if v := hm["url"]; v != nil {
			h.URL = f.Template(v, "url", env)
			f.checkURL(v, "url")
			f.checkServiceRefs(v)
		} else {
			f.Errf(m["http"], "add url:", "http probe %s needs url:", name)
		}
		if v := hm["method"]; v != nil {
			h.Method = strings.ToUpper(f.Str(v, "method"))
			if h.Method != "GET" && h.Method != "HEAD" {
				f.Errf(v, "a probe only reads: use GET", "probe %s: method %s is not read-only", name, h.Method)
			}
		}
		if v := hm["headers"]; v != nil {
			h.Headers = f.TemplateMap(v, "headers", "header", env, nil)
		}
		p.HTTP = h
	case m["call_tool"] != nil:
		t := &scenario.ToolProbe{Tool: f.Str(m["call_tool"], "call_tool")}
		if v := m["endpoint"]; v != nil {
			t.Endpoint = f.Str(v, "endpoint")
		}
		if v := m["args"]; v != nil {
			if v.Kind != yaml.MappingNode {
				f.Errf(v, "args is a mapping such as {accountId: acct_1}", "args must be a mapping, got %s", yamlfile.KindName(v))
			} else {
				t.Args = f.args(v, env)
			}
		}
		p.CallTool = t
	case m["sql"] != nil:
		sm, ok := f.fields(m["sql"], "sql probe", schema.SQLProbe)
		if !ok {
			return nil
		}
		q := &scenario.SQLProbe{}
		if v := sm["dsn"]; v != nil {
			q.DSN = f.Template(v, "dsn", env)
		} else {
			f.Errf(m["sql"], `add dsn: "${DATABASE_URL}"`, "sql probe %s needs dsn:", name)
		}
		if v := sm["query"]; v != nil {
			q.Query = f.Str(v, "query")
			if pr := sqlread.Check(q.Query, sqlread.Postgres); pr != nil {
				f.ErrAt(f.OffsetPos(v, pr.Offset), pr.Hint, "sql probe %s: %s", name, pr.Msg)
			}
		} else {
			f.Errf(m["sql"], "add query: select …", "sql probe %s needs query:", name)
		}
		if v := sm["args"]; v != nil {
			if v.Kind != yaml.SequenceNode {
				f.Errf(v, "args is a list of the query's $1, $2, … such as [\"acct_{{ session }}\"]", "args must be a list, got %s", yamlfile.KindName(v))
			} else {
				for _, a := range v.Content {
					q.Args = append(q.Args, f.Template(a, "sql arg", env))
				}
			}
		}
		p.SQL = q
	case m["redis"] != nil:
		rm, ok := f.fields(m["redis"], "redis probe", schema.RedisProbe)
		if !ok {
			return nil
		}
		r := &scenario.RedisProbe{}
		if v := rm["addr"]; v != nil {
			r.Addr = f.Template(v, "addr", env)
		} else {
			r.Addr, _ = assert.CompileTemplate("127.0.0.1:6379", env)
		}
		if v := rm["command"]; v != nil && v.Kind == yaml.SequenceNode && len(v.Content) > 0 {
			for _, a := range v.Content {
				r.Command = append(r.Command, f.Template(a, "redis command", env))
			}
			if cmd := strings.ToUpper(v.Content[0].Value); !readOnlyRedis[cmd] {
				f.Errf(v.Content[0], "a probe only reads: use GET, KEYS, LLEN, LRANGE, HGETALL, …", "probe %s: %s is not a read-only Redis command", name, cmd)
			}
		} else {
			f.Errf(m["redis"], "add command: [KEYS, \"idem:*\"]", "redis probe %s needs command: as a list", name)
		}
		p.Redis = r
	case m["file"] != nil:
		p.File = f.fileProbe(name, m["file"], env)
		if p.File == nil {
			return nil
		}
	}
	return p
}

// fileProbe decodes file: {path, format, query, args, optional} of probe name.
func (f *file) fileProbe(name string, n *yaml.Node, env assert.Env) *scenario.FileProbe {
	fm, ok := f.fields(n, "file probe", schema.FileProbe)
	if !ok {
		return nil
	}
	fp := &scenario.FileProbe{Dir: filepath.Dir(f.Path), Format: scenario.FileJSON}
	if v := fm["path"]; v != nil {
		fp.Path = f.Template(v, "path", env)
	} else {
		f.Errf(n, "add path: data/state.json", "file probe %s needs path:", name)
	}
	if v := fm["format"]; v != nil {
		switch fp.Format = f.Str(v, "format"); fp.Format {
		case scenario.FileJSON, scenario.FileJSONLines, scenario.FileSQLite:
		default:
			f.Errf(v, "use json (one document), jsonl (a document a line) or sqlite (with a query)", "file probe %s: unknown format %q", name, fp.Format)
		}
	}
	if v := fm["query"]; v != nil {
		fp.Query = f.Str(v, "query")
		if fp.Format != scenario.FileSQLite {
			f.Errf(v, "add format: sqlite, or drop the query", "file probe %s: a query is for format: sqlite", name)
		} else if pr := sqlread.Check(fp.Query, sqlread.SQLite); pr != nil {
			f.ErrAt(f.OffsetPos(v, pr.Offset), pr.Hint, "file probe %s: %s", name, pr.Msg)
		}
	} else if fp.Format == scenario.FileSQLite {
		f.Errf(n, `add query: "select count(*) as n from refunds"`, "file probe %s: format: sqlite needs query:", name)
	}
	if v := fm["args"]; v != nil {
		if fp.Format != scenario.FileSQLite {
			f.Errf(v, "add format: sqlite, or drop the args", "file probe %s: args are for format: sqlite", name)
		}
		if v.Kind == yaml.SequenceNode {
			for _, a := range v.Content {
				fp.Args = append(fp.Args, f.Template(a, "query arg", env))
			}
		}
	}
	if v := fm["optional"]; v != nil {
		fp.Optional = f.Bool(v, "optional")
	}
	return fp
}

// readOnlyRedis are the Redis commands a probe may send.
var readOnlyRedis = map[string]bool{
	"GET": true, "MGET": true, "EXISTS": true, "TTL": true, "PTTL": true, "TYPE": true, "KEYS": true, "SCAN": true,
	"STRLEN": true, "LLEN": true, "LRANGE": true, "LINDEX": true, "HGET": true, "HGETALL": true, "HKEYS": true,
	"HLEN": true, "HEXISTS": true, "SCARD": true, "SMEMBERS": true, "SISMEMBER": true, "ZCARD": true,
	"ZRANGE": true, "ZSCORE": true, "XLEN": true, "XRANGE": true, "DBSIZE": true,
}

// checkRoutes reports NAME.FIELD reads of a sink whose FIELD is not one of its routes.
func (f *file) checkRoutes(s *scenario.Scenario, n *yaml.Node, members []assert.Member, base int) {
	for _, mem := range members {
		sk, ok := s.Sinks[mem.Name]
		if !ok {
			continue
		}
		routes := []string{"requests", "url"}
		found := mem.Field == "requests" || mem.Field == "url"
		for _, r := range sk.Routes {
			routes = append(routes, r.Name)
			found = found || r.Name == mem.Field
		}
		if !found {
			hint := "its routes: " + strings.Join(routes, ", ")
			if c := assert.Closest(mem.Field, routes); c != "" {
				hint = fmt.Sprintf("did you mean %q?", c)
			}
			f.ErrAt(f.OffsetPos(n, base+mem.Offset), hint, "sink %s has no route %q", mem.Name, mem.Field)
		}
	}
}
