package decode

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/schema"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// configEnv is what {{ }} in endpoint and service settings may use.
func configEnv() assert.Env {
	return assert.Env{"port": 0, "services": map[string]any{}, "sinks": map[string]any{}}
}

// endpoint decodes one entry of endpoints: (http or mcp, plus the common fields).
func (f *file) endpoint(name string, n *yaml.Node) *scenario.Endpoint {
	m, ok := f.fields(n, "endpoint "+name, schema.Endpoint)
	if !ok {
		return nil
	}
	ep := &scenario.Endpoint{Name: name, Pos: f.Pos(n), Key: scenario.DefaultHTTPKey}
	f.NamesHint = []string{"services.NAME.port", "sinks.NAME.url"}
	switch {
	case m["mcp"] != nil && m["http"] != nil:
		f.Errf(n, "an endpoint is either http or mcp", "endpoint %s has both http: and mcp:", name)
		return nil
	case m["mcp"] != nil:
		ep.Key = scenario.DefaultMCPKey
		if ep.MCP = f.mcpEndpoint(ep, m["mcp"]); ep.MCP == nil {
			return nil
		}
		f.endpointCommon(ep, m, true)
		return ep
	case m["http"] == nil:
		f.Errf(n, "add http: {url: http://127.0.0.1:8080/tools/{tool}} or mcp: {command: [node, server.js]}", "endpoint %s needs http: or mcp:", name)
		return nil
	}
	hm, ok := f.fields(m["http"], "http endpoint", schema.HTTPEndpoint)
	if !ok {
		return nil
	}
	h := scenario.NewHTTPEndpoint()
	if v := hm["openapi"]; v != nil {
		f.openAPI(h, v)
		ep.URLPos = f.Pos(v)
		if hm["method"] != nil {
			f.Errf(hm["method"], "remove method:; each operation has its own", "method: has no effect with openapi: (http endpoint %s)", name)
		}
	}
	switch {
	case hm["urls"] != nil:
		if hm["url"] != nil {
			f.Errf(hm["urls"], "write url: for one instance, urls: [URL1, URL2] for several", "http endpoint %s has both url: and urls:", name)
		}
		if h.OpenAPI != nil {
			f.Errf(hm["urls"], "remove urls:, or openapi: and name the tools' URL with {tool}", "urls: is not supported with openapi: (http endpoint %s)", name)
		}
		h.URLs = f.instanceURLs(ep, hm["urls"], "http: {urls: [http://10.0.0.1:8080/tools/{tool}, http://10.0.0.2:8080/tools/{tool}]}")
	case hm["url"] == nil:
		if h.OpenAPI == nil {
			f.Errf(m["http"], "add url: http://127.0.0.1:8080/tools/{tool}, or openapi: FILE|URL", "http endpoint %s needs url:", name)
		}
	default:
		h.URL = f.Template(hm["url"], "url", configEnv())
		f.checkURL(hm["url"], "url")
		ep.URLPos = f.Pos(hm["url"])
		f.checkServiceRefs(hm["url"])
	}
	if v := hm["method"]; v != nil {
		h.Method = strings.ToUpper(f.Str(v, "method"))
	}
	if v := hm["timeout"]; v != nil {
		h.Timeout = f.Duration(v, "timeout")
	}
	if v := hm["max_response_bytes"]; v != nil {
		h.MaxResponseBytes = int64(f.Int(v, "max_response_bytes", 1, 1<<30))
	}
	if v := hm["headers"]; v != nil {
		h.Headers = f.TemplateMap(v, "headers", "header", configEnv(), nil)
	}
	ep.HTTP = h
	f.endpointCommon(ep, m, false)
	return ep
}

// keyFormat decodes the format: and length: of a key spec (what names it: key, check.key); the
// zero format when neither is written.
func (f *file) keyFormat(km map[string]*yaml.Node, what string) scenario.KeyFormat {
	fn, ln := km["format"], km["length"]
	if fn == nil {
		if ln != nil {
			f.Errf(ln, "add format: \"ik_{random}\" (a template that length: fills)", "%s.length needs a format", what)
		}
		return scenario.KeyFormat{}
	}
	length := 0
	if ln != nil {
		// Int reports a length out of range; the format is then judged with a length that
		// is not, so the one mistake is not reported again at format:.
		length = min(max(f.Int(ln, what+".length", 1, scenario.MaxKeyLength), 1), scenario.MaxKeyLength)
	}
	kf, err := scenario.ParseKeyFormat(f.Str(fn, what+".format"), length)
	if err != nil {
		f.Errf(fn, "", "%s.%v", what, err)
	}
	return kf
}

// endpointCommon decodes key, mutating, allow_hosts, compare, natural and refusal.
func (f *file) endpointCommon(ep *scenario.Endpoint, m map[string]*yaml.Node, isMCP bool) {
	if v := m["key"]; v != nil {
		km, ok := f.fields(v, "key", schema.Key)
		if ok {
			carriers := len(km)
			for _, k := range []string{"format", "length"} {
				if km[k] != nil {
					carriers--
				}
			}
			format := f.keyFormat(km, "key")
			defer func() { ep.Key.Format = format }()
			switch {
			case carriers != 1:
				f.Errf(v, "write key: {header: Idempotency-Key}, key: {arg: idempotencyKey} or key: {meta: idempotencyKey}, with format: if the server wants one", "key needs exactly one of header, arg or meta")
			case km["header"] != nil:
				if isMCP {
					f.Errf(km["header"], "use arg or meta for an MCP endpoint", "key.header is only for http endpoints")
				}
				ep.Key = scenario.KeySpec{Header: f.Str(km["header"], "key.header")}
			case km["arg"] != nil:
				ep.Key = scenario.KeySpec{Arg: f.Str(km["arg"], "key.arg")}
			case km["meta"] != nil:
				if !isMCP {
					f.Errf(km["meta"], "use header or arg for an http endpoint", "key.meta is only for MCP endpoints")
				}
				ep.Key = scenario.KeySpec{Meta: f.Str(km["meta"], "key.meta")}
			}
		}
	}
	if v := m["mutating"]; v != nil {
		ep.Mutating = f.Strings(v, "mutating")
		if ep.Mutating == nil {
			ep.Mutating = []string{}
		}
	}
	if v := m["allow_hosts"]; v != nil {
		ep.AllowHosts = f.Strings(v, "allow_hosts")
	}
	if v := m["compare"]; v != nil {
		if cm, ok := f.fields(v, "compare", schema.Compare); ok && cm["ignore"] != nil {
			ep.Ignore = f.Strings(cm["ignore"], "compare.ignore")
			for i, p := range ep.Ignore {
				if p == "" || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..") {
					f.ErrAt(f.Pos(item(cm["ignore"], i)), "write a dotted path to a field of the answer, such as requestId or meta.at",
						"compare.ignore: %q is not a path", p)
				}
			}
		}
	}
	if v := m["natural"]; v != nil {
		ep.Natural = f.Strings(v, "natural")
	}
	if v := m["refusal"]; v != nil {
		ep.Refusal = f.refusal(v)
	}
	if v := m["spread"]; v != nil {
		if sp, ok := yamlfile.Choice(f.File, v, "spread", dispatch.Spreads,
			"spread is round-robin (a retry or a fan-out copy goes to the next instance), same (every call to the first) or random (seeded by the trial)"); ok {
			ep.Spread = sp
		}
	}
}

// refusal decodes an endpoint's refusal: a list of mappings, each of dotted paths to the values
// (scalars, lists, mappings) an answer must hold to be an error-shaped success.
func (f *file) refusal(n *yaml.Node) []map[string]any {
	const example = `write refusal: [{status: failed}, {"error.code": DENIED}]`
	if n.Kind != yaml.SequenceNode {
		f.Errf(n, example, "refusal must be a list of mappings, got %s", yamlfile.KindName(n))
		return nil
	}
	var out []map[string]any
	for _, c := range n.Content {
		if c.Kind != yaml.MappingNode || len(c.Content) == 0 {
			f.Errf(c, example, "each entry of refusal must be a non-empty mapping of answer paths to values, got %s", yamlfile.KindName(c))
			continue
		}
		shape := map[string]any{}
		for i := 0; i+1 < len(c.Content); i += 2 {
			k := c.Content[i]
			if k.Value == "" || strings.HasPrefix(k.Value, ".") || strings.HasSuffix(k.Value, ".") || strings.Contains(k.Value, "..") {
				f.Errf(k, "write a dotted path to a field of the answer, such as status or error.code", "refusal: %q is not a path", k.Value)
				continue
			}
			shape[k.Value] = f.Value(c.Content[i+1])
		}
		out = append(out, shape)
	}
	return out
}

// instanceURLs decodes urls: (a non-empty list of URL templates, one per instance), each URL
// checked as url: is.
func (f *file) instanceURLs(ep *scenario.Endpoint, n *yaml.Node, example string) []*assert.Template {
	ep.URLPos = f.Pos(n)
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		f.Errf(n, "write "+example, "urls must be a non-empty list of URLs, got %s", yamlfile.KindName(n))
		return nil
	}
	if len(n.Content) > scenario.MaxReplicas {
		f.Errf(n, fmt.Sprintf("name at most %d instances", scenario.MaxReplicas), "urls has %d entries", len(n.Content))
		return nil
	}
	out := make([]*assert.Template, 0, len(n.Content))
	for _, u := range n.Content {
		if u.Kind != yaml.ScalarNode {
			f.Errf(u, "write "+example, "each entry of urls must be a URL, got %s", yamlfile.KindName(u))
			continue
		}
		out = append(out, f.Template(u, "urls", configEnv()))
		ep.URLsPos = append(ep.URLsPos, f.Pos(u))
		f.checkURL(u, "urls")
		f.checkServiceRefs(u)
	}
	return out
}

// countSet counts the keys of m that are set.
func countSet(m map[string]*yaml.Node, keys ...string) int {
	n := 0
	for _, k := range keys {
		if m[k] != nil {
			n++
		}
	}
	return n
}

// mcpEndpoint decodes an endpoint's mcp: section (a command or a url).
func (f *file) mcpEndpoint(ep *scenario.Endpoint, n *yaml.Node) *scenario.MCPEndpoint {
	name := ep.Name
	m, ok := f.fields(n, "mcp endpoint", schema.MCPEndpoint)
	if !ok {
		return nil
	}
	e := scenario.NewMCPEndpoint()
	switch {
	case countSet(m, "command", "url", "urls") != 1:
		f.Errf(n, "write mcp: {command: [node, server.js]}, mcp: {url: http://127.0.0.1:3000/mcp} or mcp: {urls: [URL1, URL2]}", "mcp endpoint %s needs one of command, url or urls", name)
		return nil
	case m["urls"] != nil:
		e.URLs = f.instanceURLs(ep, m["urls"], "mcp: {urls: [http://10.0.0.1:3000/mcp, http://10.0.0.2:3000/mcp]}")
	case m["command"] != nil:
		c := m["command"]
		if c.Kind != yaml.SequenceNode || len(c.Content) == 0 {
			f.Errf(c, "write the command as a list: [node, server.js]", "command must be a non-empty list of strings")
			return nil
		}
		for _, x := range c.Content {
			e.Command = append(e.Command, f.Template(x, "command", configEnv()))
			f.checkServiceRefs(x)
		}
		if prog := c.Content[0]; prog.Kind == yaml.ScalarNode && !assert.HasTemplate(prog.Value) {
			if _, err := exec.LookPath(prog.Value); err != nil {
				f.Errf(prog, "install it or give its full path", "mcp server command %q not found", prog.Value)
			}
		}
	default:
		e.URL = f.Template(m["url"], "url", configEnv())
		f.checkURL(m["url"], "url")
		f.checkServiceRefs(m["url"])
		ep.URLPos = f.Pos(m["url"])
	}
	if v := m["env"]; v != nil {
		e.Env = f.TemplateMap(v, "env", "env", configEnv(), nil)
	}
	if v := m["dir"]; v != nil {
		e.Dir = f.Dir(v)
	}
	if v := m["headers"]; v != nil {
		e.Headers = f.TemplateMap(v, "headers", "header", configEnv(), nil)
	}
	if v := m["timeout"]; v != nil {
		e.Timeout = f.Duration(v, "timeout")
	}
	if v := m["init_timeout"]; v != nil {
		e.InitTimeout = f.Duration(v, "init_timeout")
	}
	if v := m["max_response_bytes"]; v != nil {
		e.MaxResponseBytes = int64(f.Int(v, "max_response_bytes", 1, 1<<30))
	}
	if v := m["conflict_match"]; v != nil {
		var err error
		if e.ConflictMatch, err = regexp.Compile(f.Str(v, "conflict_match")); err != nil {
			f.Errf(v, "conflict_match is a regular expression", "conflict_match: %v", err)
		}
	}
	return e
}
