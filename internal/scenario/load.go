package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/redact"
)

// maxFileSize bounds a scenario or config file.
const maxFileSize = 8 << 20

// ConfigName is the shared config file looked up next to the scenarios and above them.
const ConfigName = "idemtest.yaml"

// Options control loading.
type Options struct {
	// Config is an explicit config file (--config); when empty, idemtest.yaml is looked up from
	// each scenario's directory upwards, then from the working directory upwards.
	Config string
	// LookupEnv resolves ${VAR}; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// AllowHosts are extra non-loopback hosts calls may go to (--allow-host).
	AllowHosts []string
}

// Load reads, decodes, validates and compiles the scenarios under paths (files or directories).
// Every problem in every file is returned together as Errors; nothing is partially loaded.
func Load(paths []string, opts Options) ([]*Scenario, error) {
	return load(context.Background(), paths, opts)
}

func load(ctx context.Context, paths []string, opts Options) ([]*Scenario, error) {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	files, errs := scenarioFiles(ctx, paths)
	l := &loader{opts: opts, configs: map[string]*config{}}
	var out []*Scenario
	var explicit *config
	if opts.Config != "" {
		c, cerrs := l.config(opts.Config)
		errs = append(errs, cerrs...)
		explicit = c
	}
	for _, path := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cfg := explicit
		if opts.Config == "" {
			var cerrs Errors
			cfg, cerrs = l.findConfig(path)
			errs = append(errs, cerrs...)
		}
		if cfg != nil && cfg.broken {
			// The config's own errors are the root cause; loading the scenario against what
			// could be decoded of it would add one derived error per step ("no endpoint").
			continue
		}
		s, serrs := l.scenario(path, cfg)
		errs = append(errs, serrs...)
		if s != nil {
			out = append(out, s)
		}
	}
	if len(errs) > 0 {
		errs.sort()
		errs.redact(&l.secrets)
		return nil, errs
	}
	return out, nil
}

// LoadConfig loads the config file alone, for commands that talk to an endpoint without a
// scenario (tools, init): opts.Config, or idemtest.yaml found from dir upwards. The result is a
// scenario without steps whose endpoints and services are the config's.
func LoadConfig(dir string, opts Options) (*Scenario, error) {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	l := &loader{opts: opts, configs: map[string]*config{}}
	var c *config
	var errs Errors
	if opts.Config != "" {
		c, errs = l.config(opts.Config)
	} else {
		c, errs = l.findConfig(filepath.Join(dir, "scenario.yaml"))
	}
	if len(errs) > 0 {
		errs.sort()
		errs.redact(&l.secrets)
		return nil, errs
	}
	s := &Scenario{Trials: 1, Endpoints: map[string]*Endpoint{}, Services: map[string]*Service{}, AllowHosts: opts.AllowHosts, Secrets: &redact.Secrets{}}
	if c != nil {
		s.Secrets = c.secrets
		s.Config, s.File = c.Path, c.Path
		s.Endpoints, s.Services = merge(c.Endpoints, nil), merge(c.Services, nil)
		s.Sinks, s.Probes, s.Check = merge(c.Sinks, nil), merge(c.Probes, nil), c.Check
		s.AllowHosts = append(s.AllowHosts, c.AllowHosts...)
	}
	return s, nil
}

// scenarioFiles expands directories into their *.yaml and *.yml files (not idemtest.yaml),
// sorted, without duplicates.
func scenarioFiles(ctx context.Context, paths []string) ([]string, Errors) {
	var errs Errors
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			errs = append(errs, &Error{Pos: Pos{File: p}, Msg: "no such file or directory", Hint: "pass scenario files or directories that contain them"})
			continue
		}
		if !info.IsDir() {
			add(filepath.Clean(p))
			continue
		}
		var found []string
		_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if ctx.Err() != nil {
				return filepath.SkipAll
			}
			if err != nil {
				return nil
			}
			name := d.Name()
			if d.IsDir() {
				if path != p && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
					return filepath.SkipDir
				}
				return nil
			}
			ext := filepath.Ext(name)
			if (ext == ".yaml" || ext == ".yml") && name != ConfigName && name != "idemtest.yml" && !strings.HasPrefix(name, ".") && looksLikeScenario(path) {
				found = append(found, filepath.Clean(path))
			}
			return nil
		})
		sort.Strings(found)
		if len(found) == 0 {
			errs = append(errs, &Error{Pos: Pos{File: p}, Msg: "no scenario files in this directory",
				Hint: "a scenario is a *.yaml file with steps:; other YAML files found in a directory are left alone"})
		}
		for _, f := range found {
			add(f)
		}
	}
	return out, errs
}

// looksLikeScenario tells, for a YAML file found by walking a directory, whether it is meant as
// a scenario: its top level has steps:. Other YAML (a compose file, an idemtest config passed
// with --config, CI settings) is left alone; a file that does not parse is kept, so its error
// is reported. A file named on the command line is always loaded. The check scans the lines
// instead of decoding: a large YAML file that is not a scenario costs one pass.
func looksLikeScenario(path string) bool {
	b, err := readFile(path)
	if err != nil {
		// Kept, so that why it cannot be read is reported.
		return true
	}
	return hasTopLevelKey(b, "steps")
}

type loader struct {
	opts    Options
	configs map[string]*config
	// secrets are every file's, to redact the load errors with.
	secrets redact.Secrets
}

// config is a decoded idemtest.yaml.
type config struct {
	Path string
	// broken is set when the file had errors: scenarios using it are not loaded.
	broken bool
	// Endpoint is the default endpoint of call steps that name none.
	Endpoint    string
	endpointPos Pos
	Endpoints   map[string]*Endpoint
	Services    map[string]*Service
	Sinks       map[string]*Sink
	Probes      map[string]*Probe
	AllowHosts  []string
	Check       *CheckConfig
	secrets     *redact.Secrets
}

func (l *loader) findConfig(scenarioPath string) (*config, Errors) {
	dirs := []string{}
	if abs, err := filepath.Abs(filepath.Dir(scenarioPath)); err == nil {
		dirs = append(dirs, abs)
	}
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd)
	}
	for _, d := range dirs {
		for {
			p := filepath.Join(d, ConfigName)
			if _, err := os.Stat(p); err == nil {
				if rel, err := filepath.Rel(mustWd(), p); err == nil && !strings.HasPrefix(rel, "..") {
					p = rel
				}
				return l.config(p)
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return nil, nil
}

func mustWd() string {
	wd, _ := os.Getwd()
	return wd
}

// config loads a config file once; its errors are reported once.
func (l *loader) config(path string) (*config, Errors) {
	if c, ok := l.configs[path]; ok {
		return c, nil
	}
	f, root := l.parse(path)
	c := &config{Path: path, secrets: &f.secrets}
	if root != nil {
		m, ok := f.mapping(root, "config", "endpoint", "endpoints", "services", "allow_hosts", "sinks", "probes", "check")
		if ok {
			if n := m["endpoint"]; n != nil {
				c.Endpoint, c.endpointPos = f.str(n, "endpoint"), f.pos(n)
			}
			l.sections(f, m, c, path)
			if n := m["check"]; n != nil {
				c.Check = f.checkSection(n, c)
			}
			f.checkRefs(c.Services, c.Sinks)
		}
	}
	l.configs[path] = c
	if len(f.errs) > 0 {
		c.broken = true
		return c, f.errs
	}
	return c, nil
}

// parse reads a file, rejects binary data, parses YAML and expands ${VAR}.
func (l *loader) parse(path string) (*file, *yaml.Node) {
	f := &file{path: path}
	data, err := readFile(path)
	if err != nil {
		var ferr *fileError
		if errors.As(err, &ferr) {
			f.errAt(Pos{File: path}, ferr.hint, "%s", ferr.msg)
		} else {
			f.errAt(Pos{File: path}, "", "read: %v", errors.Unwrap(err))
		}
		return f, nil
	}
	if len(data) > maxFileSize {
		f.errAt(Pos{File: path}, "split it into several scenario files", "file is larger than %d MiB", maxFileSize>>20)
		return f, nil
	}
	if i := bytes.IndexByte(data, 0); i >= 0 || !utf8.Valid(data) {
		if i < 0 {
			i = firstInvalidUTF8(data)
		}
		line := bytes.Count(data[:i], []byte("\n")) + 1
		f.errAt(Pos{File: path, Line: line, Col: i - bytes.LastIndexByte(data[:i], '\n')}, "scenario files are UTF-8 YAML text",
			"not a text file (binary data at byte %d)", i)
		return f, nil
	}
	f.lines = strings.Split(string(data), "\n")
	var doc yaml.Node
	if err := f.decodeOne(data, &doc); err != nil {
		f.yamlError(err)
		return f, nil
	}
	if len(doc.Content) == 0 {
		f.errAt(Pos{File: path, Line: 1, Col: 1}, "a scenario needs at least name: and steps:", "empty file")
		return f, nil
	}
	root := doc.Content[0]
	f.expandEnv(root, l.opts.LookupEnv)
	l.secrets.Merge(&f.secrets)
	return f, root
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return 0
}

var yamlLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

func (f *file) yamlError(err error) {
	msg := err.Error()
	line := 1
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			line, _ = strconv.Atoi(m[1])
		}
		msg = m[2]
	}
	// The parser reports where the enclosing block began; the first line at which a prefix of
	// the file stops parsing is nearer to the mistake. A prefix that fails stays failing as it
	// grows, so a binary search finds that line in a few parses, where trying each line in turn
	// parsed the file up to 500 times (half a minute for 8 MiB of long lines).
	fails := func(k int) bool {
		var n yaml.Node
		return yaml.Unmarshal([]byte(strings.Join(f.lines[:k], "\n")), &n) != nil
	}
	for lo, hi := line, min(line+499, len(f.lines)); lo <= hi; {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			line, hi = mid, mid-1
		} else {
			lo = mid + 1
		}
	}
	col := 1
	if line <= len(f.lines) {
		col = len(f.lines[line-1]) - len(strings.TrimLeft(f.lines[line-1], " \t")) + 1
	}
	hint := "check the indentation and quoting around this line"
	if strings.Contains(msg, "mapping values are not allowed") {
		hint = `a value that contains ": " or starts with "{" needs quotes: assert: 'x.count({a: 1}) == 1'`
	}
	f.errAt(Pos{File: f.path, Line: line, Col: col}, hint, "invalid YAML: %s", msg)
}

// configEnv is what {{ }} in endpoint and service settings may use.
func configEnv() assert.Env {
	return assert.Env{"port": 0, "services": map[string]any{}, "sinks": map[string]any{}}
}

// sections decodes the parts a config and a scenario share.
func (l *loader) sections(f *file, m map[string]*yaml.Node, c *config, source string) {
	if n := m["allow_hosts"]; n != nil {
		c.AllowHosts = f.strings(n, "allow_hosts")
	}
	if n := m["endpoints"]; n != nil {
		c.Endpoints = map[string]*Endpoint{}
		for _, kv := range f.entries(n, "endpoints") {
			if ep := f.endpoint(kv[0].Value, kv[1]); ep != nil {
				c.Endpoints[ep.Name] = ep
			}
		}
	}
	if n := m["services"]; n != nil {
		c.Services = map[string]*Service{}
		for _, kv := range f.entries(n, "services") {
			if s := f.service(kv[0].Value, kv[1], source); s != nil {
				c.Services[s.Name] = s
			}
		}
	}
	if n := m["sinks"]; n != nil {
		c.Sinks = map[string]*Sink{}
		for _, kv := range f.entries(n, "sinks") {
			if s := f.sink(kv[0], kv[1], source); s != nil {
				c.Sinks[s.Name] = s
			}
		}
	}
	if n := m["probes"]; n != nil {
		c.Probes = map[string]*Probe{}
		for _, kv := range f.entries(n, "probes") {
			if p := f.probe(kv[0], kv[1], source); p != nil {
				c.Probes[p.Name] = p
			}
		}
	}
}

func (f *file) template(n *yaml.Node, what string, env assert.Env) *assert.Template {
	s := f.str(n, what)
	t, err := assert.CompileTemplate(s, env)
	if err != nil {
		f.exprError(n, err, what)
		return nil
	}
	return t
}

// exprError reports an expression error at its position inside the scalar n.
func (f *file) exprError(n *yaml.Node, err error, what string) {
	var e *assert.Error
	if errors.As(err, &e) {
		hint := e.Hint
		if strings.HasPrefix(e.Msg, "unknown name") {
			hint = strings.TrimSpace(hint + " names available here: " + strings.Join(f.namesHint, ", "))
		}
		f.errAt(f.offsetPos(n, e.Offset), hint, "%s: %s", what, e.Msg)
		return
	}
	f.errf(n, "", "%s: %v", what, err)
}

func (f *file) endpoint(name string, n *yaml.Node) *Endpoint {
	m, ok := f.mapping(n, "endpoint "+name, "http", "mcp", "key", "mutating", "allow_hosts", "compare", "natural")
	if !ok {
		return nil
	}
	ep := &Endpoint{Name: name, Pos: f.pos(n), Key: KeySpec{Header: "Idempotency-Key"}}
	f.namesHint = []string{"services.NAME.port", "sinks.NAME.url"}
	switch {
	case m["mcp"] != nil && m["http"] != nil:
		f.errf(n, "an endpoint is either http or mcp", "endpoint %s has both http: and mcp:", name)
		return nil
	case m["mcp"] != nil:
		ep.Key = KeySpec{Arg: "idempotencyKey"}
		if ep.MCP = f.mcpEndpoint(ep, m["mcp"]); ep.MCP == nil {
			return nil
		}
		f.endpointCommon(ep, m, true)
		return ep
	case m["http"] == nil:
		f.errf(n, "add http: {url: http://127.0.0.1:8080/tools/{tool}} or mcp: {command: [node, server.js]}", "endpoint %s needs http: or mcp:", name)
		return nil
	}
	hm, ok := f.mapping(m["http"], "http endpoint", "url", "method", "headers", "timeout", "max_response_bytes", "openapi")
	if !ok {
		return nil
	}
	h := &HTTPEndpoint{Method: "POST", Timeout: 30 * time.Second, MaxResponseBytes: 10 << 20}
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
		h.Headers = map[string]*assert.Template{}
		for _, kv := range f.entries(v, "headers") {
			h.Headers[kv[0].Value] = f.template(kv[1], "header "+kv[0].Value, configEnv())
		}
	}
	ep.HTTP = h
	f.endpointCommon(ep, m, false)
	return ep
}

// endpointCommon decodes key, mutating, allow_hosts, compare and natural.
func (f *file) endpointCommon(ep *Endpoint, m map[string]*yaml.Node, isMCP bool) {
	if v := m["key"]; v != nil {
		km, ok := f.mapping(v, "key", "header", "arg", "meta")
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
		if cm, ok := f.mapping(v, "compare", "ignore"); ok && cm["ignore"] != nil {
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

func (f *file) mcpEndpoint(ep *Endpoint, n *yaml.Node) *MCPEndpoint {
	name := ep.Name
	m, ok := f.mapping(n, "mcp endpoint", "command", "env", "dir", "url", "headers", "timeout", "init_timeout", "conflict_match", "max_response_bytes")
	if !ok {
		return nil
	}
	e := &MCPEndpoint{Timeout: 30 * time.Second, InitTimeout: 30 * time.Second, MaxResponseBytes: 10 << 20}
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
		e.Env = map[string]*assert.Template{}
		for _, kv := range f.entries(v, "env") {
			e.Env[kv[0].Value] = f.template(kv[1], "env "+kv[0].Value, configEnv())
		}
	}
	if v := m["dir"]; v != nil {
		e.Dir = f.str(v, "dir")
		if !filepath.IsAbs(e.Dir) {
			e.Dir = filepath.Join(filepath.Dir(f.path), e.Dir)
		}
	}
	if v := m["headers"]; v != nil {
		e.Headers = map[string]*assert.Template{}
		for _, kv := range f.entries(v, "headers") {
			e.Headers[kv[0].Value] = f.template(kv[1], "header "+kv[0].Value, configEnv())
		}
	}
	if v := m["timeout"]; v != nil {
		e.Timeout = f.duration(v, "timeout")
	}
	if v := m["init_timeout"]; v != nil {
		e.InitTimeout = f.duration(v, "init_timeout")
	}
	if v := m["max_response_bytes"]; v != nil {
		if m["url"] == nil {
			f.errf(v, "a stdio server's messages are bounded by the MCP SDK", "max_response_bytes is only for an MCP server reached by url")
		}
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

var (
	serviceRef = regexp.MustCompile(`services\.([A-Za-z_][A-Za-z0-9_-]*)`)
	sinkRef    = regexp.MustCompile(`sinks\.([A-Za-z_][A-Za-z0-9_-]*)`)
)

// serviceUse is one services.NAME reference in a template.
type serviceUse struct {
	n    *yaml.Node
	name string
	off  int
}

func (f *file) checkServiceRefs(n *yaml.Node) {
	for _, m := range serviceRef.FindAllStringSubmatchIndex(n.Value, -1) {
		f.serviceRefs = append(f.serviceRefs, serviceUse{n, n.Value[m[2]:m[3]], m[2]})
	}
	for _, m := range sinkRef.FindAllStringSubmatchIndex(n.Value, -1) {
		f.sinkRefs = append(f.sinkRefs, serviceUse{n, n.Value[m[2]:m[3]], m[2]})
	}
}

func (f *file) service(name string, n *yaml.Node, source string) *Service {
	m, ok := f.mapping(n, "service "+name, "command", "env", "dir", "ready")
	if !ok {
		return nil
	}
	s := &Service{Name: name, Pos: f.pos(n), Config: source, Ready: Ready{Timeout: 60 * time.Second}}
	f.namesHint = []string{"port", "services.NAME.port", "sinks.NAME.url"}
	if m["command"] == nil {
		f.errf(n, `add command: [go, run, ./server, --addr, "127.0.0.1:{{ port }}"]`, "service %s needs command:", name)
	} else {
		if m["command"].Kind != yaml.SequenceNode {
			f.errf(m["command"], `write the command as a list: [go, run, ./server]`, "command must be a list of strings")
		} else {
			for _, c := range m["command"].Content {
				s.Command = append(s.Command, f.template(c, "command", configEnv()))
				f.checkServiceRefs(c)
			}
			if len(s.Command) == 0 {
				f.errf(m["command"], "", "command is empty")
			}
		}
	}
	if v := m["env"]; v != nil {
		s.Env = map[string]*assert.Template{}
		for _, kv := range f.entries(v, "env") {
			s.Env[kv[0].Value] = f.template(kv[1], "env "+kv[0].Value, configEnv())
			f.checkServiceRefs(kv[1])
		}
	}
	if v := m["dir"]; v != nil {
		// dir is relative to the file that declares the service, so a config works from anywhere.
		s.Dir = f.str(v, "dir")
		if !filepath.IsAbs(s.Dir) {
			s.Dir = filepath.Join(filepath.Dir(f.path), s.Dir)
		}
	}
	if v := m["ready"]; v != nil {
		rm, ok := f.mapping(v, "ready", "http", "tcp", "log", "timeout")
		if ok {
			kinds := 0
			if x := rm["http"]; x != nil {
				s.Ready.HTTP = f.template(x, "ready.http", configEnv())
				f.checkURL(x, "ready.http")
				kinds++
			}
			if x := rm["tcp"]; x != nil {
				s.Ready.TCP = f.template(x, "ready.tcp", configEnv())
				kinds++
			}
			if x := rm["log"]; x != nil {
				s.Ready.Log = f.str(x, "ready.log")
				if _, err := regexp.Compile(s.Ready.Log); err != nil {
					f.errf(x, "ready.log is a regular expression matched against each output line", "ready.log: %v", err)
				}
				kinds++
			}
			if kinds > 1 {
				f.errf(v, "", "ready takes one of http, tcp or log")
			}
			if x := rm["timeout"]; x != nil {
				s.Ready.Timeout = f.duration(x, "ready.timeout")
			}
		}
	}
	return s
}

// merge returns a's entries overridden by b's.
func merge[T any](a, b map[string]T) map[string]T {
	out := map[string]T{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func (l *loader) scenario(path string, cfg *config) (*Scenario, Errors) {
	f, root := l.parse(path)
	if root == nil {
		return nil, f.errs
	}
	m, ok := f.mapping(root, "scenario", "name", "description", "tags", "trials", "endpoint", "steps", "endpoints", "services", "sinks", "probes", "allow_hosts")
	if !ok {
		return nil, f.errs
	}
	s := &Scenario{File: path, Pos: f.pos(root), Trials: 1, Secrets: &f.secrets}
	if n := m["name"]; n != nil {
		s.Name = f.str(n, "name")
	}
	if s.Name == "" && (m["name"] == nil || m["name"].Tag != "!!null") {
		f.errf(root, "add name: a sentence saying what the scenario proves", "scenario has no name")
	}
	if n := m["tags"]; n != nil {
		s.Tags = f.strings(n, "tags")
	}
	if n := m["trials"]; n != nil {
		s.Trials = f.integer(n, "trials", 1, MaxTrials)
	}
	if n := m["endpoint"]; n != nil {
		s.Endpoint = f.str(n, "endpoint")
		s.endpointPos = f.pos(n)
	}
	own := &config{}
	l.sections(f, m, own, path)
	hosts := own.AllowHosts
	if cfg == nil {
		cfg = &config{}
	}
	s.Config = cfg.Path
	s.Secrets.Merge(cfg.secrets)
	if s.Endpoint == "" && cfg.Endpoint != "" {
		s.Endpoint, s.endpointPos = cfg.Endpoint, cfg.endpointPos
	}
	s.Endpoints = merge(cfg.Endpoints, own.Endpoints)
	s.Services = merge(cfg.Services, own.Services)
	s.Sinks = merge(cfg.Sinks, own.Sinks)
	s.Probes = merge(cfg.Probes, own.Probes)
	hosts = append(hosts, cfg.AllowHosts...)
	f.observed = map[string]any{}
	for name := range s.Sinks {
		f.observed[name] = map[string]any{}
	}
	for name := range s.Probes {
		f.observed[name] = assert.Dynamic
	}
	hosts = append(hosts, l.opts.AllowHosts...)
	s.AllowHosts = hosts
	f.checkRefs(s.Services, s.Sinks)

	if n := m["steps"]; n == nil {
		f.errf(root, "add steps: with call_tool and assert steps", "scenario has no steps")
	} else if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		f.errf(n, "steps is a list: - call_tool: NAME", "steps must be a non-empty list")
	} else {
		for i, sn := range n.Content {
			if st := f.step(s, i, sn); st != nil {
				s.Steps = append(s.Steps, st)
			}
		}
	}
	f.validate(s, hosts)
	f.validateProbes(s)
	if len(f.errs) > 0 {
		return nil, f.errs
	}
	return s, nil
}

// checkRefs reports services.NAME and sinks.NAME references to names not defined.
func (f *file) checkRefs(services map[string]*Service, sinks map[string]*Sink) {
	check := func(refs []serviceUse, what string, names []string) {
		for _, ref := range refs {
			if contains(names, ref.name) {
				continue
			}
			hint := what + "s defined: " + strings.Join(names, ", ")
			if len(names) == 0 {
				hint = "define it under " + what + "s: in " + ConfigName + " or in this file"
			} else if c := closest(ref.name, names); c != "" {
				hint = fmt.Sprintf("did you mean %q?", c)
			}
			f.errAt(f.offsetPos(ref.n, ref.off), hint, "unknown %s %q", what, ref.name)
		}
	}
	check(f.serviceRefs, "service", keys(services))
	check(f.sinkRefs, "sink", keys(sinks))
	f.serviceRefs, f.sinkRefs = nil, nil
}

func keys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var callFields = []string{"id", "call_tool", "endpoint", "args", "key", "retry_of", "fanout", "sync", "stagger", "timeout",
	"lose_response", "retry", "expect", "expect_error", "without_key", "verdict"}

// step decodes one step of either form.
func (f *file) step(s *Scenario, i int, n *yaml.Node) *Step {
	if n.Kind != yaml.MappingNode {
		f.errf(n, "a step is a mapping such as - call_tool: issue_refund", "step %d must be a mapping, got %s", i+1, kindName(n))
		return nil
	}
	n = f.seedStep(n)
	if n == nil {
		return nil
	}
	st := &Step{Index: i, ID: fmt.Sprintf("step%d", i+1), Pos: f.pos(n)}
	has := func(k string) bool {
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == k {
				return true
			}
		}
		return false
	}
	kinds := 0
	for _, k := range []string{"assert", "sleep"} {
		if has(k) {
			kinds++
		}
	}
	if has("call_tool") || has("retry_of") {
		kinds++
	}
	if kinds != 1 {
		f.errf(n, "each step has exactly one of call_tool, assert or sleep", "step %d is neither a call, an assertion nor a sleep", i+1)
		return nil
	}
	var env assert.Env
	switch {
	case has("assert"):
		st.Kind = AssertStep
		m, _ := f.mapping(n, "assert step", "id", "assert", "eventually")
		f.stepID(st, m)
		env = f.stepEnv(s, st)
		if x := m["assert"]; x != nil {
			st.Pos = f.pos(x)
			src := f.expression(x, "assert")
			p, err := assert.Compile(src, env)
			if err != nil {
				f.exprError(x, err, "assert")
			} else {
				f.checkRoutes(s, x, p.Members(), 0)
			}
			st.Assert = p
		}
		if x := m["eventually"]; x != nil {
			st.Eventually = f.duration(x, "eventually")
		}
	case has("sleep"):
		st.Kind = SleepStep
		m, _ := f.mapping(n, "sleep step", "id", "sleep")
		f.stepID(st, m)
		st.Sleep = f.duration(m["sleep"], "sleep")
	default:
		st.Kind = CallStep
		m, _ := f.mapping(n, "call step", callFields...)
		f.stepID(st, m)
		env = f.stepEnv(s, st)
		f.callStep(st, m, env)
	}
	return st
}

// seedStep rewrites the hosted-runner form (action/tool/check) into the native one, keeping
// every node and so every position.
func (f *file) seedStep(n *yaml.Node) *yaml.Node {
	var action *yaml.Node
	for j := 0; j+1 < len(n.Content); j += 2 {
		if n.Content[j].Value == "action" {
			action = n.Content[j+1]
		}
	}
	if action == nil {
		return n
	}
	rename := map[string]string{}
	switch action.Value {
	case "call_tool":
		rename["tool"] = "call_tool"
	case "assert":
		rename["check"] = "assert"
	case "sleep":
		rename["duration"] = "sleep"
	default:
		hint := "action is call_tool, assert or sleep"
		if c := closest(action.Value, []string{"call_tool", "assert", "sleep"}); c != "" {
			hint = fmt.Sprintf("did you mean %q?", c)
		}
		f.errf(action, hint, "unknown action %q", action.Value)
		return nil
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Line: n.Line, Column: n.Column}
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		if k.Value == "action" {
			continue
		}
		if to, ok := rename[k.Value]; ok {
			k2 := *k
			k2.Value = to
			k = &k2
		}
		out.Content = append(out.Content, k, v)
	}
	if len(out.Content) == 0 || (action.Value == "call_tool" && !hasKey(out, "call_tool")) {
		f.errf(n, "add tool: NAME", "action: call_tool needs tool:")
		return nil
	}
	if action.Value == "assert" && !hasKey(out, "assert") {
		f.errf(n, "add check: EXPRESSION", "action: assert needs check:")
		return nil
	}
	return out
}

func hasKey(n *yaml.Node, k string) bool {
	for j := 0; j+1 < len(n.Content); j += 2 {
		if n.Content[j].Value == k {
			return true
		}
	}
	return false
}

var idPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (f *file) stepID(st *Step, m map[string]*yaml.Node) {
	if x := m["id"]; x != nil {
		id := f.str(x, "id")
		if !idPattern.MatchString(id) {
			f.errf(x, "ids are names usable in assertions: letters, digits and _", "invalid step id %q", id)
			return
		}
		switch id {
		case "session", "trial", "uuid", "now":
			f.errf(x, "choose another id", "step id %q is a built-in name", id)
			return
		}
		if _, taken := f.observed[id]; taken {
			f.errf(x, "choose another id", "step id %q is already the name of a sink or probe", id)
			return
		}
		st.ID = id
		st.Pos = f.pos(x)
	}
}

// stepEnv is what a step's expressions may use: earlier steps, session and trial. A call step's
// result is typed (assert.CallResult, or assert.FanoutResult for a fan-out), so a field typo is
// a load error; the runner fills in the same types.
func (f *file) stepEnv(s *Scenario, st *Step) assert.Env {
	env := assert.Env{"session": "", "trial": 0}
	names := []string{"session", "trial"}
	for _, name := range keys(f.observed) {
		env[name] = f.observed[name]
		names = append(names, name)
	}
	for _, prev := range s.Steps {
		if prev.Kind == CallStep {
			env[prev.ID] = assert.CallResult{}
			if prev.Fanout > 1 {
				env[prev.ID] = assert.FanoutResult{}
			}
			names = append(names, prev.ID)
		}
	}
	f.namesHint = names
	return env
}

func (f *file) callStep(st *Step, m map[string]*yaml.Node, env assert.Env) {
	if x := m["call_tool"]; x != nil {
		st.Tool = f.str(x, "call_tool")
	}
	if x := m["endpoint"]; x != nil {
		st.Endpoint = f.str(x, "endpoint")
		st.endpointPos = f.pos(x)
	}
	if x := m["retry_of"]; x != nil {
		st.retryOfPos = f.pos(x)
	}
	if x := m["args"]; x != nil {
		if x.Kind != yaml.MappingNode {
			f.errf(x, "args is a mapping such as {accountId: acct_1, amount: 10}", "args must be a mapping, got %s", kindName(x))
		} else {
			st.Args = f.args(x, env)
		}
	}
	if x := m["key"]; x != nil {
		st.Key = f.template(x, "key", env)
	}
	if x := m["retry_of"]; x != nil {
		st.RetryOf = f.str(x, "retry_of")
	}
	st.Fanout = 1
	if x := m["fanout"]; x != nil {
		st.Fanout = f.integer(x, "fanout", 1, MaxFanout)
	}
	// last-byte is the default: it caught more races than barrier in the benchmark (BENCHMARKS.md).
	st.Sync = "last-byte"
	if x := m["sync"]; x != nil {
		st.syncPos = f.pos(x)
		switch v := f.str(x, "sync"); v {
		case "barrier", "last-byte", "single-packet":
			st.Sync = v
		default:
			hint := "sync is last-byte (all but the final byte beforehand), barrier (each copy writes its whole request at the release) or single-packet (HTTP/2: every stream's end in one write)"
			if c := closest(v, []string{"barrier", "last-byte", "single-packet"}); c != "" {
				hint = fmt.Sprintf("did you mean %q?", c)
			}
			f.errf(x, hint, "unknown sync %q", v)
		}
	}
	if x := m["stagger"]; x != nil {
		st.StaggerMin, st.StaggerMax = f.stagger(x)
	}
	if x := m["timeout"]; x != nil {
		var ok bool
		if st.Timeout, ok = f.durationOK(x, "timeout"); ok && st.Timeout == 0 {
			f.errf(x, "use a duration above zero, such as 200ms", "timeout must be above zero")
		}
	}
	if x := m["lose_response"]; x != nil {
		st.LoseResponse = f.boolean(x, "lose_response")
	}
	if x := m["without_key"]; x != nil {
		st.WithoutKey = f.boolean(x, "without_key")
	}
	if x := m["retry"]; x != nil {
		st.Retry = f.retry(x)
	}
	if x := m["verdict"]; x != nil {
		switch v := f.str(x, "verdict"); v {
		case "on":
		case "off":
			st.VerdictOff = true
		default:
			hint := "verdict is on (the default) or off (this step's calls are not judged for exactly-once)"
			if c := closest(v, []string{"on", "off"}); c != "" {
				hint = fmt.Sprintf("did you mean %q?", c)
			}
			f.errf(x, hint, "unknown verdict %q", v)
		}
	}
	switch {
	case st.Fanout > 1 || st.Timeout > 0 || st.Retry != nil:
		st.Expect = Any
	case st.LoseResponse:
		st.Expect = Info
	case st.WithoutKey:
		st.Expect = Fail
	default:
		st.Expect = OK
	}
	if x := m["expect"]; x != nil {
		switch v := Outcome(f.str(x, "expect")); v {
		case OK, Fail, Info, Any:
			st.Expect = v
		default:
			f.errf(x, "expect is ok, fail, info or any", "unknown outcome %q", v)
		}
	}
	if x := m["expect_error"]; x != nil && f.boolean(x, "expect_error") {
		if m["expect"] != nil {
			f.errf(x, "keep one: expect_error: true means expect: fail", "expect_error and expect are both given")
		}
		st.Expect = Fail
	}
	if st.LoseResponse && st.Fanout > 1 {
		f.errf(m["lose_response"], "lose the response of a single call, then fan out its retries", "lose_response cannot be combined with fanout")
	}
	f.refuseIgnored(st, m)
	if st.WithoutKey && (m["key"] != nil) {
		f.errf(m["without_key"], "remove key: or without_key:", "without_key and key are both given")
	}
}

// stagger decodes "2ms" (0 to 2ms) or "500us..2ms".
func (f *file) stagger(n *yaml.Node) (time.Duration, time.Duration) {
	v := f.str(n, "stagger")
	lo, hi := "0s", v
	if a, b, ok := strings.Cut(v, ".."); ok {
		lo, hi = a, b
	}
	min, err1 := time.ParseDuration(strings.TrimSpace(lo))
	max, err2 := time.ParseDuration(strings.TrimSpace(hi))
	switch {
	case err1 != nil || err2 != nil || min < 0 || max < min:
		f.errf(n, "write stagger: 2ms (offsets from 0 to 2ms) or stagger: 100us..2ms", "stagger %q is not a duration or a range of durations", v)
	case max > time.Second:
		f.errf(n, "stagger aims at windows inside one request: keep it under a second", "stagger %q is too wide", v)
	}
	return min, max
}

func (f *file) args(n *yaml.Node, env assert.Env) any {
	switch n.Kind {
	case yaml.MappingNode:
		out := map[string]any{}
		for _, kv := range f.entries(n, "args") {
			out[kv[0].Value] = f.args(kv[1], env)
		}
		return out
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			out = append(out, f.args(c, env))
		}
		return out
	case yaml.ScalarNode:
		if n.Tag == "!!str" && assert.HasTemplate(n.Value) {
			return f.template(n, "template", env)
		}
	}
	return f.value(n)
}

func (f *file) retry(n *yaml.Node) *Retry {
	m, ok := f.mapping(n, "retry", "attempts", "on", "backoff")
	if !ok {
		return nil
	}
	r := &Retry{Attempts: 3, On: []string{"info", "conflict"}, Backoff: 100 * time.Millisecond}
	if x := m["attempts"]; x != nil {
		r.Attempts = f.integer(x, "retry.attempts", 1, 100)
	}
	if x := m["on"]; x != nil {
		r.On = f.strings(x, "retry.on")
		for i, o := range r.On {
			if !contains([]string{"info", "conflict", "5xx", "fail"}, o) {
				f.errAt(f.pos(x.Content[min(i, len(x.Content)-1)]), "retry.on lists info, conflict, 5xx or fail", "unknown retry condition %q", o)
			}
		}
	}
	if x := m["backoff"]; x != nil {
		r.Backoff = f.duration(x, "retry.backoff")
	}
	return r
}

// validate checks what needs the whole scenario: ids, references, endpoints, hosts.
func (f *file) validate(s *Scenario, hosts []string) {
	ids := map[string]*Step{}
	for _, st := range s.Steps {
		if prev, dup := ids[st.ID]; dup {
			f.errAt(st.Pos, fmt.Sprintf("the first is at line %d; ids must be unique", prev.Pos.Line), "duplicate step id %q", st.ID)
			continue
		}
		ids[st.ID] = st
	}
	used := map[string]bool{}
	for _, st := range s.Steps {
		if st.Kind != CallStep {
			continue
		}
		if st.RetryOf != "" {
			orig, ok := ids[st.RetryOf]
			switch {
			case !ok || orig.Index >= st.Index || orig.Kind != CallStep:
				hint := "retry_of names an earlier call step's id"
				if c := closest(st.RetryOf, keys(ids)); c != "" {
					hint = fmt.Sprintf("did you mean %q?", c)
				}
				f.errAt(st.retryOfPos, hint, "retry_of %q is not an earlier call step", st.RetryOf)
			default:
				if st.Tool == "" {
					st.Tool = orig.Tool
				} else if st.Tool != orig.Tool {
					f.errAt(st.Pos, "a retry repeats the same call: drop call_tool or make it match", "retry_of %q calls %s, this step calls %s", st.RetryOf, orig.Tool, st.Tool)
				}
				if st.Endpoint == "" {
					st.Endpoint = orig.Endpoint
				}
				if st.WithoutKey || orig.WithoutKey {
					f.errAt(st.Pos, "", "retry_of cannot be combined with without_key")
				}
			}
		}
		if st.Tool == "" && st.RetryOf == "" {
			f.errAt(st.Pos, "", "call step needs call_tool: NAME")
		}
		if st.Endpoint == "" && s.Endpoint != "" {
			st.Endpoint, st.endpointPos = s.Endpoint, s.endpointPos
		}
		switch {
		case st.Endpoint != "":
			if _, ok := s.Endpoints[st.Endpoint]; !ok {
				names := keys(s.Endpoints)
				hint := "endpoints defined: " + strings.Join(names, ", ")
				if c := closest(st.Endpoint, names); c != "" {
					hint = fmt.Sprintf("did you mean %q?", c)
				}
				f.errAt(st.endpointPos, hint, "unknown endpoint %q", st.Endpoint)
				continue
			}
		case len(s.Endpoints) == 1:
			st.Endpoint = keys(s.Endpoints)[0]
		case len(s.Endpoints) == 0:
			f.errAt(st.Pos, "define endpoints: in "+ConfigName+" or in this scenario", "no endpoint to call %s on", st.Tool)
			continue
		default:
			f.errAt(st.Pos, "endpoints defined: "+strings.Join(keys(s.Endpoints), ", "), "several endpoints are defined: set endpoint: on this step or on the scenario")
			continue
		}
		used[st.Endpoint] = true
		f.refuseSinglePacket(st, s.Endpoints[st.Endpoint])
	}
	for name := range used {
		ep := s.Endpoints[name]
		var u *assert.Template
		switch {
		case ep.HTTP != nil:
			u = ep.HTTP.URL
			if u == nil && ep.HTTP.Spec == nil {
				u = ep.HTTP.OpenAPI // a document read from a URL when the endpoint is used
			}
		case ep.MCP != nil:
			u = ep.MCP.URL
		}
		if u == nil {
			continue
		}
		if err := CheckHost(u.Source, append(hosts, ep.AllowHosts...)); err != nil {
			f.errAt(ep.urlPos, fmt.Sprintf("idemtest sends duplicate mutating calls; allow this host with allow_hosts: [%s] in %s or --allow-host %s", err.Host, ConfigName, err.Host),
				"endpoint %s: %v", name, err)
		}
	}
	f.checkProbeHosts(s, hosts)
}

// HostError is a call target that is neither loopback nor allowed.
type HostError = netguard.HostError

// CheckHost checks the host of a URL (which may contain {{ }} and {tool}) against the loopback
// rule and the allowed hosts (netguard's policy). A host that is itself templated is checked
// when it is rendered, before the trial's first call.
func CheckHost(rawURL string, allowed []string) *HostError {
	tpl := regexp.MustCompile(`\{\{.*?\}\}`)
	if h := hostOf(rawURL); h != "" && !tpl.MatchString(h) {
		u := tpl.ReplaceAllString(strings.ReplaceAll(rawURL, "{tool}", "tool"), "0")
		return checkHost(u, allowed)
	}
	return nil
}

func hostOf(raw string) string {
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if h, _, err := net.SplitHostPort(rest); err == nil {
		return h
	}
	return rest
}

func checkHost(rawURL string, allowed []string) *HostError {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	var he *HostError
	if errors.As(netguard.New(allowed).Check(u.Hostname(), u.Port()), &he) {
		return he
	}
	return nil
}

// IsLoopback reports whether host is localhost or a loopback address.
func IsLoopback(host string) bool { return netguard.IsLoopback(host) }
