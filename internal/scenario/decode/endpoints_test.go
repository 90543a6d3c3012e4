package decode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/scenario"
)

// TestHTTPEndpoint decodes an http endpoint with every common field set, and one with none.
func TestHTTPEndpoint(t *testing.T) {
	c, errs := configOf(t, `endpoints:
  refunds:
    http:
      url: "http://127.0.0.1:{{ services.api.port }}/tools/{tool}"
      method: put
      timeout: 3s
      max_response_bytes: 1024
      headers: {Authorization: "Bearer x", X-Port: "{{ port }}"}
    key: {header: X-Key, format: uuidv7}
    mutating: [issue_refund]
    natural: [set_status]
    compare: {ignore: [requestId, meta.at]}
    refusal: [{status: failed}, {error.code: DENIED, ok: 0}]
    allow_hosts: [api.example]
    spread: random
  plain:
    http: {url: "http://127.0.0.1:1/{tool}"}
  many:
    http: {urls: ["http://127.0.0.1:1/{tool}", "http://127.0.0.1:2/{tool}"]}
    mutating: []
services:
  api: {command: [api]}
`)
	if len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	ep := c.Endpoints["refunds"]
	h := ep.HTTP
	if ep.Name != "refunds" || ep.Pos.Line != 3 || ep.MCP != nil || h == nil {
		t.Fatalf("endpoint %+v", ep)
	}
	if h.URL.Source != "http://127.0.0.1:{{ services.api.port }}/tools/{tool}" || ep.URLPos.Line != 4 || ep.URLPos.Col != 12 {
		t.Errorf("url %q at %v", h.URL.Source, ep.URLPos)
	}
	if h.Method != "PUT" || h.Timeout != 3*time.Second || h.MaxResponseBytes != 1024 || h.Headers["X-Port"].Source != "{{ port }}" || h.Headers["Authorization"].Source != "Bearer x" {
		t.Errorf("http %+v", h)
	}
	if ep.Key.Header != "X-Key" || ep.Key.Arg != "" || ep.Key.Format.IsZero() {
		t.Errorf("key %+v", ep.Key)
	}
	if !ep.IsMutating("issue_refund") || ep.IsMutating("list_refunds") || !ep.IsNatural("set_status") {
		t.Errorf("mutating %v natural %v", ep.Mutating, ep.Natural)
	}
	if strings.Join(ep.Ignore, ",") != "requestId,meta.at" || strings.Join(ep.AllowHosts, ",") != "api.example" || ep.Spread != dispatch.SpreadRandom {
		t.Errorf("ignore %v allow_hosts %v spread %v", ep.Ignore, ep.AllowHosts, ep.Spread)
	}
	if len(ep.Refusal) != 2 || ep.Refusal[0]["status"] != "failed" || ep.Refusal[1]["error.code"] != "DENIED" || ep.Refusal[1]["ok"] != 0 {
		t.Errorf("refusal %#v", ep.Refusal)
	}
	plain := c.Endpoints["plain"]
	def := scenario.NewHTTPEndpoint()
	if ph := plain.HTTP; plain.Key != scenario.DefaultHTTPKey || plain.Mutating != nil || plain.Spread != "" || ph.Method != def.Method || ph.Timeout != def.Timeout || ph.MaxResponseBytes != def.MaxResponseBytes || ph.Headers != nil || ph.OpenAPI != nil {
		t.Errorf("defaults %+v %+v", plain, plain.HTTP)
	}
	many := c.Endpoints["many"]
	if len(many.HTTP.URLs) != 2 || many.HTTP.URL != nil || len(many.URLsPos) != 2 || many.URLsPos[1].Line != 19 || many.Mutating == nil || many.IsMutating("issue_refund") {
		t.Errorf("urls %+v, mutating %#v", many, many.Mutating)
	}
}

// TestMCPEndpoint decodes MCP endpoints over stdio and over HTTP.
func TestMCPEndpoint(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, errs := configOf(t, `endpoints:
  stdio:
    mcp:
      command: ["`+filepath.ToSlash(exe)+`", --addr, "127.0.0.1:{{ port }}"]
      env: {TOKEN: t}
      dir: srv
      timeout: 2s
      init_timeout: 9s
      conflict_match: "in progress|busy"
      max_response_bytes: 2048
    key: {meta: io.example/key, format: "ik_{random}", length: 20}
  remote:
    mcp: {url: "http://127.0.0.1:3000/mcp", headers: {Authorization: "Bearer x"}}
    key: {arg: requestKey}
`)
	if len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	stdio, remote := c.Endpoints["stdio"], c.Endpoints["remote"]
	m := stdio.MCP
	if stdio.HTTP != nil || m == nil || len(m.Command) != 3 || m.Command[2].Source != "127.0.0.1:{{ port }}" || m.Env["TOKEN"].Source != "t" {
		t.Fatalf("stdio %+v %+v", stdio, m)
	}
	if m.Dir != filepath.Join(filepath.Dir(c.Path), "srv") || m.Timeout != 2*time.Second || m.InitTimeout != 9*time.Second || m.ConflictMatch.String() != "in progress|busy" || m.MaxResponseBytes != 2048 {
		t.Errorf("stdio %+v", m)
	}
	if stdio.Key.Meta != "io.example/key" || stdio.Key.Format.IsZero() {
		t.Errorf("stdio key %+v", stdio.Key)
	}
	if remote.MCP.URL.Source != "http://127.0.0.1:3000/mcp" || remote.URLPos.Line != 13 || remote.MCP.Headers["Authorization"] == nil || remote.Key != (scenario.KeySpec{Arg: "requestKey"}) {
		t.Errorf("remote %+v %+v", remote, remote.MCP)
	}
	defaults, _ := configOf(t, "endpoints:\n  e: {mcp: {url: \"http://127.0.0.1:1/mcp\"}}\n")
	if e := defaults.Endpoints["e"]; e.Key != scenario.DefaultMCPKey || e.MCP.Timeout <= 0 || e.MCP.InitTimeout <= 0 {
		t.Errorf("mcp defaults %+v %+v", e, e.MCP)
	}
}

// TestEndpointErrors: each bad endpoint field is reported at its value; an endpoint is http or
// mcp, and its key travels in one place.
func TestEndpointErrors(t *testing.T) {
	const url = `url: "http://127.0.0.1:1/{tool}"`
	checkBad(t, []badCase{
		{name: "not a mapping", src: "endpoints:\n  e: http://127.0.0.1:1/{tool}\n",
			want: []string{`2:6: endpoint e must be a mapping (key: value lines), got "http://127.0.0.1:1/{tool}"`}},
		{name: "unknown field", src: "endpoints:\n  e:\n    htpp: {" + url + "}\n",
			want: []string{`3:5: unknown field "htpp" in endpoint e (did you mean "http"?)`, "3:5: endpoint e needs http: or mcp:"}},
		{name: "both http and mcp", src: "endpoints:\n  e:\n    http: {" + url + "}\n    mcp: {url: \"http://127.0.0.1:1/mcp\"}\n",
			want: []string{"3:5: endpoint e has both http: and mcp:"}},
		{name: "http without url", src: "endpoints:\n  e:\n    http: {method: POST}\n",
			want: []string{"3:11: http endpoint e needs url:"}},
		{name: "http unknown field", src: "endpoints:\n  e:\n    http: {" + url + ", metod: GET}\n",
			want: []string{`3:46: unknown field "metod" in http endpoint (did you mean "method"?)`}},
		{name: "url and urls", src: "endpoints:\n  e:\n    http: {" + url + ", urls: [\"http://127.0.0.1:2/{tool}\"]}\n",
			want: []string{"3:52: http endpoint e has both url: and urls:"}},
		{name: "urls empty", src: "endpoints:\n  e:\n    http: {urls: []}\n",
			want: []string{"3:18: urls must be a non-empty list of URLs, got a list"}},
		{name: "urls a string", src: "endpoints:\n  e:\n    http: {urls: \"http://127.0.0.1:2/{tool}\"}\n",
			want: []string{`3:18: urls must be a non-empty list of URLs, got "http://127.0.0.1:2/{tool}"`}},
		{name: "urls entry not a URL", src: "endpoints:\n  e:\n    http: {urls: [{a: b}]}\n",
			want: []string{"3:19: each entry of urls must be a URL, got a mapping"}},
		{name: "url not http", src: "endpoints:\n  e:\n    http: {url: \"ftp://127.0.0.1/{tool}\"}\n",
			want: []string{`3:17: url: "ftp://127.0.0.1/{tool}" is not an http:// or https:// URL`}},
		{name: "url template with an unknown name", src: "endpoints:\n  e:\n    http: {url: \"http://127.0.0.1:{{ prot }}/{tool}\"}\n",
			want: []string{`3:38: url: unknown name prot (did you mean "port"?)`}},
		{name: "unknown service in url", src: "endpoints:\n  e:\n    http: {url: \"http://127.0.0.1:{{ services.apj.port }}/{tool}\"}\nservices:\n  api: {command: [api]}\n",
			want: []string{`3:47: unknown service "apj" (did you mean "api"?)`}},
		{name: "timeout negative", src: "endpoints:\n  e:\n    http: {" + url + ", timeout: -1s}\n",
			want: []string{"3:55: timeout must not be negative, got -1s"}},
		{name: "max_response_bytes zero", src: "endpoints:\n  e:\n    http: {" + url + ", max_response_bytes: 0}\n",
			want: []string{"3:66: max_response_bytes is 0, out of range"}},
		{name: "headers not a mapping", src: "endpoints:\n  e:\n    http: {" + url + ", headers: [a]}\n",
			want: []string{"3:55: headers must be a mapping, got a list"}},
		{name: "openapi empty", src: "endpoints:\n  e:\n    http: {openapi: \"\"}\n",
			want: []string{"3:11: http endpoint e needs url:", "3:21: openapi must name a file or a URL"}},
		{name: "openapi with method", src: "endpoints:\n  e:\n    http: {openapi: \"http://127.0.0.1:1/openapi.json\", method: GET}\n",
			want: []string{"3:64: method: has no effect with openapi: (http endpoint e)"}},
		{name: "openapi with urls", src: "endpoints:\n  e:\n    http: {openapi: \"http://127.0.0.1:1/openapi.json\", urls: [\"http://127.0.0.1:2/\"]}\n",
			want: []string{"3:62: urls: is not supported with openapi: (http endpoint e)"}},
		{name: "key not a mapping", src: "endpoints:\n  e:\n    http: {" + url + "}\n    key: Idempotency-Key\n",
			want: []string{`4:10: key must be a mapping (key: value lines), got "Idempotency-Key"`}},
		{name: "key in two places", src: "endpoints:\n  e:\n    http: {" + url + "}\n    key: {header: K, arg: k}\n",
			want: []string{"4:10: key needs exactly one of header, arg or meta"}},
		{name: "key in no place", src: "endpoints:\n  e:\n    http: {" + url + "}\n    key: {format: uuid}\n",
			want: []string{"4:10: key needs exactly one of header, arg or meta"}},
		{name: "key unknown field", src: "endpoints:\n  e:\n    http: {" + url + "}\n    key: {heder: K}\n",
			want: []string{"4:10: key needs exactly one of header, arg or meta", `4:11: unknown field "heder" in key (did you mean "header"?)`}},
		{name: "key meta on http", src: "endpoints:\n  e:\n    http: {" + url + "}\n    key: {meta: k}\n",
			want: []string{"4:17: key.meta is only for MCP endpoints"}},
		{name: "key header on mcp", src: "endpoints:\n  e:\n    mcp: {url: \"http://127.0.0.1:1/mcp\"}\n    key: {header: K}\n",
			want: []string{"4:19: key.header is only for http endpoints"}},
		{name: "key length without format", src: "endpoints:\n  e:\n    http: {" + url + "}\n    key: {header: K, length: 10}\n",
			want: []string{"4:30: key.length needs a format"}},
		{name: "key length out of range",
			src:  "endpoints:\n  e:\n    http: {" + url + "}\n    key: {header: K, format: \"ik_{random}\", length: 256}\n",
			want: []string{"4:53: key.length is 256, out of range"}},
		{name: "key format unknown", src: "endpoints:\n  e:\n    http: {" + url + "}\n    key: {header: K, format: uuid4}\n",
			want: []string{`4:30: key.format "uuid4": use uuid, uuidv7, ulid or a template with {random} or {index}, such as "ik_{random}" with a length`}},
		{name: "mutating not a list", src: "endpoints:\n  e:\n    http: {" + url + "}\n    mutating: {a: b}\n",
			want: []string{"4:15: mutating must be a list of strings, got a mapping"}},
		{name: "natural not a list", src: "endpoints:\n  e:\n    http: {" + url + "}\n    natural: {a: b}\n",
			want: []string{"4:14: natural must be a list of strings, got a mapping"}},
		{name: "refusal not a list", src: "endpoints:\n  e:\n    http: {" + url + "}\n    refusal: {status: failed}\n",
			want: []string{"4:14: refusal must be a list of mappings, got a mapping"}},
		{name: "refusal entries not paths to values", src: "endpoints:\n  e:\n    http: {" + url + "}\n    refusal: [failed, {}, {.a: 1}]\n",
			want: []string{"4:15: each entry of refusal must be a non-empty mapping of answer paths to values, got \"failed\"", "4:23: each entry of refusal must be a non-empty mapping of answer paths to values, got a mapping", `4:28: refusal: ".a" is not a path`}},
		{name: "compare unknown field", src: "endpoints:\n  e:\n    http: {" + url + "}\n    compare: {ignor: [a]}\n",
			want: []string{`4:15: unknown field "ignor" in compare (did you mean "ignore"?)`}},
		{name: "compare.ignore not paths", src: "endpoints:\n  e:\n    http: {" + url + "}\n    compare: {ignore: [ok, .a, b., c..d, \"\"]}\n",
			want: []string{`4:28: compare.ignore: ".a" is not a path`, `4:32: compare.ignore: "b." is not a path`, `4:36: compare.ignore: "c..d" is not a path`, `4:42: compare.ignore: "" is not a path`}},
		{name: "compare.ignore one bad path, not in a list",
			src:  "endpoints:\n  e:\n    http: {" + url + "}\n    compare: {ignore: .a}\n",
			want: []string{`4:23: compare.ignore: ".a" is not a path`}},
		{name: "spread unknown", src: "endpoints:\n  e:\n    http: {" + url + "}\n    spread: round-robbin\n",
			want: []string{`4:13: unknown spread "round-robbin" (did you mean "round-robin"?)`}},
		{name: "mcp with neither command nor url", src: "endpoints:\n  e:\n    mcp: {timeout: 1s}\n",
			want: []string{"3:10: mcp endpoint e needs one of command, url or urls"}},
		{name: "mcp with command and url", src: "endpoints:\n  e:\n    mcp: {command: [x], url: \"http://127.0.0.1:1/mcp\"}\n",
			want: []string{"3:10: mcp endpoint e needs one of command, url or urls"}},
		{name: "mcp command empty", src: "endpoints:\n  e:\n    mcp: {command: []}\n",
			want: []string{"3:20: command must be a non-empty list of strings"}},
		{name: "mcp command a string", src: "endpoints:\n  e:\n    mcp: {command: node server.js}\n",
			want: []string{"3:20: command must be a non-empty list of strings"}},
		{name: "mcp command not found", src: "endpoints:\n  e:\n    mcp: {command: [idemtest-no-such-program]}\n",
			want: []string{`3:21: mcp server command "idemtest-no-such-program" not found`}},
		{name: "mcp unknown field", src: "endpoints:\n  e:\n    mcp: {url: \"http://127.0.0.1:1/mcp\", init_timout: 1s}\n",
			want: []string{`3:42: unknown field "init_timout" in mcp endpoint (did you mean "init_timeout"?)`}},
		{name: "mcp conflict_match not a regular expression", src: "endpoints:\n  e:\n    mcp: {url: \"http://127.0.0.1:1/mcp\", conflict_match: \"(\"}\n",
			want: []string{"3:58: conflict_match: error parsing regexp: missing closing ): `(`"}},
		{name: "mcp init_timeout not a duration", src: "endpoints:\n  e:\n    mcp: {url: \"http://127.0.0.1:1/mcp\", init_timeout: 5}\n",
			want: []string{`3:56: init_timeout must be a duration, got "5"`}},
		{name: "mcp max_response_bytes above the maximum", src: "endpoints:\n  e:\n    mcp: {url: \"http://127.0.0.1:1/mcp\", max_response_bytes: 1073741825}\n",
			want: []string{"3:62: max_response_bytes is 1073741825, out of range"}},
	}, configErrors)
}
