package scenario

import (
	"os/exec"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/idemtest/idemtest/internal/assert"
)

// configEnv is what {{ }} in endpoint and service settings may use.
func configEnv() assert.Env {
	return assert.Env{"port": 0, "services": map[string]any{}, "sinks": map[string]any{}}
}

// endpoint decodes one entry of endpoints: (http or mcp, plus the common fields).
func (f *file) endpoint(name string, n *yaml.Node) *Endpoint {
	m, ok := f.fields(n, "endpoint "+name, endpointFields)
	if !ok {
		return nil
	}
	ep := &Endpoint{Name: name, Pos: f.pos(n), Key: defaultHTTPKey}
	f.namesHint = []string{"services.NAME.port", "sinks.NAME.url"}
	switch {
	case m["mcp"] != nil && m["http"] != nil:
		f.errf(n, "an endpoint is either http or mcp", "endpoint %s has both http: and mcp:", name)
		return nil
	case m["mcp"] != nil:
		ep.Key = defaultMCPKey
		if ep.MCP = f.mcpEndpoint(ep, m["mcp"]); ep.MCP == nil {
			return nil
		}
		f.endpointCommon(ep, m, true)
		return ep
	case m["http"] == nil:
		f.errf(n, "add http: {url: http://127.0.0.1:8080/tools/{tool}} or mcp: {command: [node, server.js]}", "endpoint %s needs http: or mcp:", name)
		return nil
	}
	hm, ok := f.fields(m["http"], "http endpoint", httpEndpointFields)
	if !ok {
		return nil
	}
	h := newHTTPEndpoint()
	if v := hm["openapi"]; v != nil {
		f.openAPI(h, v)
		ep.urlPos = f.pos(v)
		if hm["method"] != nil {
			f.errf(hm["method"], "remove method:; each operation has its own", "method: has no effect with openapi: (http endpoint %s)", name)
		}
	}
	if hm["url"] == nil {
		if h.OpenAPI == nil {
			f.errf(m["http"], "add url: http://127.0.0.1:8080/tools/{tool}, or openapi: FILE|URL", "http endpoint %s needs url:", name)
		}
	} else {
		h.URL = f.template(hm["url"], "url", configEnv())
		f.checkURL(hm["url"], "url")
		ep.urlPos = f.pos(hm["url"])
		f.checkServiceRefs(hm["url"])
	}
	if v := hm["method"]; v != nil {
		h.Method = strings.ToUpper(f.str(v, "method"))
	}
	if v := hm["timeout"]; v != nil {
		h.Timeout = f.duration(v, "timeout")
	}
	if v := hm["max_response_bytes"]; v != nil {
		h.MaxResponseBytes = int64(f.integer(v, "max_response_bytes", 1, 1<<30))
	}
	if v := hm["headers"]; v != nil {
		h.Headers = f.templateMap(v, "headers", "header", configEnv(), false)
	}
	ep.HTTP = h
	f.endpointCommon(ep, m, false)
	return ep
}

// endpointCommon decodes key, mutating, allow_hosts, compare and natural.
func (f *file) endpointCommon(ep *Endpoint, m map[string]*yaml.Node, isMCP bool) {
	if v := m["key"]; v != nil {
		km, ok := f.fields(v, "key", keyFields)
		if ok {
			switch {
			case len(km) != 1:
				f.errf(v, "write key: {header: Idempotency-Key}, key: {arg: idempotencyKey} or key: {meta: idempotencyKey}", "key needs exactly one of header, arg or meta")
			case km["header"] != nil:
				if isMCP {
					f.errf(km["header"], "use arg or meta for an MCP endpoint", "key.header is only for http endpoints")
				}
				ep.Key = KeySpec{Header: f.str(km["header"], "key.header")}
			case km["arg"] != nil:
				ep.Key = KeySpec{Arg: f.str(km["arg"], "key.arg")}
			case km["meta"] != nil:
				if !isMCP {
					f.errf(km["meta"], "use header or arg for an http endpoint", "key.meta is only for MCP endpoints")
				}
				ep.Key = KeySpec{Meta: f.str(km["meta"], "key.meta")}
			}
		}
	}
	if v := m["mutating"]; v != nil {
		ep.Mutating = f.strings(v, "mutating")
		if ep.Mutating == nil {
			ep.Mutating = []string{}
		}
	}
	if v := m["allow_hosts"]; v != nil {
		ep.AllowHosts = f.strings(v, "allow_hosts")
	}
	if v := m["compare"]; v != nil {
		if cm, ok := f.fields(v, "compare", compareFields); ok && cm["ignore"] != nil {
			ep.Ignore = f.strings(cm["ignore"], "compare.ignore")
			for i, p := range ep.Ignore {
				if p == "" || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..") {
					f.errAt(f.pos(cm["ignore"].Content[min(i, len(cm["ignore"].Content)-1)]), "write a dotted path to a field of the answer, such as requestId or meta.at",
						"compare.ignore: %q is not a path", p)
				}
			}
		}
	}
	if v := m["natural"]; v != nil {
		ep.Natural = f.strings(v, "natural")
	}
}

// mcpEndpoint decodes an endpoint's mcp: section (a command or a url).
func (f *file) mcpEndpoint(ep *Endpoint, n *yaml.Node) *MCPEndpoint {
	name := ep.Name
	m, ok := f.fields(n, "mcp endpoint", mcpEndpointFields)
	if !ok {
		return nil
	}
	e := newMCPEndpoint()
	switch {
	case (m["command"] == nil) == (m["url"] == nil):
		f.errf(n, "write mcp: {command: [node, server.js]} or mcp: {url: http://127.0.0.1:3000/mcp}", "mcp endpoint %s needs one of command or url", name)
		return nil
	case m["command"] != nil:
		c := m["command"]
		if c.Kind != yaml.SequenceNode || len(c.Content) == 0 {
			f.errf(c, "write the command as a list: [node, server.js]", "command must be a non-empty list of strings")
			return nil
		}
		for _, x := range c.Content {
			e.Command = append(e.Command, f.template(x, "command", configEnv()))
			f.checkServiceRefs(x)
		}
		if prog := c.Content[0]; prog.Kind == yaml.ScalarNode && !assert.HasTemplate(prog.Value) {
			if _, err := exec.LookPath(prog.Value); err != nil {
				f.errf(prog, "install it or give its full path", "mcp server command %q not found", prog.Value)
			}
		}
	default:
		e.URL = f.template(m["url"], "url", configEnv())
		f.checkURL(m["url"], "url")
		f.checkServiceRefs(m["url"])
		ep.urlPos = f.pos(m["url"])
	}
	if v := m["env"]; v != nil {
		e.Env = f.templateMap(v, "env", "env", configEnv(), false)
	}
	if v := m["dir"]; v != nil {
		e.Dir = f.dir(v)
	}
	if v := m["headers"]; v != nil {
		e.Headers = f.templateMap(v, "headers", "header", configEnv(), false)
	}
	if v := m["timeout"]; v != nil {
		e.Timeout = f.duration(v, "timeout")
	}
	if v := m["init_timeout"]; v != nil {
		e.InitTimeout = f.duration(v, "init_timeout")
	}
	if v := m["max_response_bytes"]; v != nil {
		e.MaxResponseBytes = int64(f.integer(v, "max_response_bytes", 1, 1<<30))
	}
	if v := m["conflict_match"]; v != nil {
		e.ConflictMatch = f.str(v, "conflict_match")
		if _, err := regexp.Compile(e.ConflictMatch); err != nil {
			f.errf(v, "conflict_match is a regular expression", "conflict_match: %v", err)
		}
	}
	return e
}
