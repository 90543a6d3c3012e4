package scenario

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/idemtest/idemtest/internal/assert"
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
		m, ok := f.fields(root, "config", configFields)
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

// scenario loads one scenario file on top of its config.
func (l *loader) scenario(path string, cfg *config) (*Scenario, Errors) {
	f, root := l.parse(path)
	if root == nil {
		return nil, f.errs
	}
	m, ok := f.fields(root, "scenario", scenarioFields)
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

func keys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
