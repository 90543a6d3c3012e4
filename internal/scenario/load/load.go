package load

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/ctxwait"
	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/decode"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

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

// Scenarios reads, decodes, validates and compiles the scenarios under paths (files or
// directories). Every problem in every file is returned together as yamlfile.Errors; nothing is
// partially loaded. It gives up when ctx is done (Ctrl-C): it returns ctx's error at once and
// the decoding it walks away from stops at the next file.
func Scenarios(ctx context.Context, paths []string, opts Options) ([]*scenario.Scenario, error) {
	type result struct {
		list []*scenario.Scenario
		err  error
	}
	r, err := ctxwait.Run(ctx, func() result {
		list, err := load(ctx, paths, opts)
		return result{list, err}
	})
	if err != nil {
		return nil, err
	}
	return r.list, r.err
}

func load(ctx context.Context, paths []string, opts Options) ([]*scenario.Scenario, error) {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	files, errs := scenarioFiles(ctx, paths)
	l := &loader{opts: opts, configs: map[string]*config{}}
	var out []*scenario.Scenario
	var explicit *config
	if opts.Config != "" {
		c, cerrs := l.config(ctx, opts.Config)
		errs = append(errs, cerrs...)
		explicit = c
	}
	for _, path := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cfg := explicit
		if opts.Config == "" {
			var cerrs yamlfile.Errors
			cfg, cerrs = l.findConfig(ctx, path)
			errs = append(errs, cerrs...)
		}
		if cfg != nil && cfg.broken {
			// The config's own errors are the root cause; loading the scenario against what
			// could be decoded of it would add one derived error per step ("no endpoint").
			continue
		}
		s, serrs := l.scenario(ctx, path, cfg.decoded())
		errs = append(errs, serrs...)
		if s != nil {
			out = append(out, s)
		}
	}
	if len(errs) > 0 {
		errs.Sort()
		errs.Redact(&l.secrets)
		return nil, errs
	}
	return out, nil
}

// Config loads the config file alone, for commands that talk to an endpoint without a
// scenario (tools, init): opts.Config, or idemtest.yaml found from dir upwards. The result is a
// scenario without steps whose endpoints and services are the config's. Reads of other
// documents (an endpoint's OpenAPI document) end with ctx.
func Config(ctx context.Context, dir string, opts Options) (*scenario.Scenario, error) {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	l := &loader{opts: opts, configs: map[string]*config{}}
	var c *config
	var errs yamlfile.Errors
	if opts.Config != "" {
		c, errs = l.config(ctx, opts.Config)
	} else {
		c, errs = l.findConfig(ctx, filepath.Join(dir, "scenario.yaml"))
	}
	if len(errs) > 0 {
		errs.Sort()
		errs.Redact(&l.secrets)
		return nil, errs
	}
	return decode.Stepless(c.decoded(), opts.AllowHosts), nil
}

// scenarioFiles expands directories into their *.yaml and *.yml files (not idemtest.yaml),
// sorted, without duplicates.
func scenarioFiles(ctx context.Context, paths []string) ([]string, yamlfile.Errors) {
	var errs yamlfile.Errors
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
			errs = append(errs, &yamlfile.Error{Pos: scenario.Pos{File: p}, Msg: "no such file or directory", Hint: "pass scenario files or directories that contain them"})
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
			if (ext == ".yaml" || ext == ".yml") && name != scenario.ConfigName && name != "idemtest.yml" && !strings.HasPrefix(name, ".") && looksLikeScenario(path) {
				found = append(found, filepath.Clean(path))
			}
			return nil
		})
		sort.Strings(found)
		if len(found) == 0 {
			errs = append(errs, &yamlfile.Error{Pos: scenario.Pos{File: p}, Msg: "no scenario files in this directory",
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
	b, err := yamlfile.ReadFile(path)
	if err != nil {
		// Kept, so that why it cannot be read is reported.
		return true
	}
	return yamlfile.HasTopLevelKey(b, "steps")
}

type loader struct {
	opts    Options
	configs map[string]*config
	// secrets are every file's, to redact the load errors with.
	secrets redact.Secrets
}

// config is a decoded idemtest.yaml, loaded once per loader.
type config struct {
	*decode.ConfigFile
	// broken is set when the file had errors: scenarios using it are not loaded.
	broken bool
}

// decoded is the config's content, nil without a config.
func (c *config) decoded() *decode.ConfigFile {
	if c == nil {
		return nil
	}
	return c.ConfigFile
}

// findConfig loads the idemtest.yaml nearest to a scenario: from its directory upwards, then
// from the working directory upwards; nil when there is none.
func (l *loader) findConfig(ctx context.Context, scenarioPath string) (*config, yamlfile.Errors) {
	for _, d := range searchStarts(scenarioPath) {
		for {
			p := filepath.Join(d, scenario.ConfigName)
			if _, err := os.Stat(p); err == nil {
				if rel, err := filepath.Rel(mustWd(), p); err == nil && !strings.HasPrefix(rel, "..") {
					p = rel
				}
				return l.config(ctx, p)
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

// searchStarts are the directories findConfig looks for idemtest.yaml in, each with every
// directory above it: the scenario's, then the working directory unless it is one of those.
func searchStarts(scenarioPath string) []string {
	var dirs []string
	if abs, err := filepath.Abs(filepath.Dir(scenarioPath)); err == nil {
		dirs = append(dirs, abs)
	}
	if wd, err := os.Getwd(); err == nil {
		if len(dirs) == 0 || !within(dirs[0], wd) {
			dirs = append(dirs, wd)
		}
	}
	return dirs
}

// within reports whether dir is ancestor or ancestor's descendant, that is whether searching
// upwards from dir passes through ancestor.
func within(dir, ancestor string) bool {
	rel, err := filepath.Rel(ancestor, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// noConfigFound says where idemtest looked for idemtest.yaml for a scenario that has none.
func noConfigFound(scenarioPath string) string {
	dirs := searchStarts(scenarioPath)
	switch len(dirs) {
	case 0:
		return "no " + scenario.ConfigName + " was found"
	case 1:
		return fmt.Sprintf("no %s was found in %s or any directory above it", scenario.ConfigName, dirs[0])
	}
	return fmt.Sprintf("no %s was found in %s or any directory above them", scenario.ConfigName,
		strings.Join(dirs[:len(dirs)-1], ", ")+" and "+dirs[len(dirs)-1])
}

func mustWd() string {
	wd, _ := os.Getwd()
	return wd
}

// read reads and parses a file, its secrets kept to redact the load errors with.
func (l *loader) read(path string) (*yamlfile.File, *yaml.Node) {
	f, root := yamlfile.Read(path, l.opts.LookupEnv)
	l.secrets.Merge(&f.Secrets)
	return f, root
}

// config loads a config file once; its errors are reported once.
func (l *loader) config(ctx context.Context, path string) (*config, yamlfile.Errors) {
	if c, ok := l.configs[path]; ok {
		return c, nil
	}
	f, root := l.read(path)
	c := &config{ConfigFile: decode.Config(ctx, f, root)}
	l.secrets.Merge(&f.Secrets) // and the variables its secrets: names
	placeholders(f, root)
	l.configs[path] = c
	if len(f.Errs) > 0 {
		c.broken = true
		return c, f.Errs
	}
	return c, nil
}

// scenario loads one scenario file on top of its config (nil without one).
func (l *loader) scenario(ctx context.Context, path string, cfg *decode.ConfigFile) (*scenario.Scenario, yamlfile.Errors) {
	f, root := l.read(path)
	if root == nil {
		return nil, f.Errs
	}
	placeholders(f, root)
	s := decode.Scenario(ctx, f, root, cfg, l.opts.AllowHosts)
	l.secrets.Merge(&f.Secrets) // and the variables its secrets: names
	if s == nil {
		return nil, f.Errs
	}
	missing := newEndpointRefs()
	validate(f, s, s.AllowHosts, missing)
	validateProbes(f, s, missing)
	lookedIn := ""
	if cfg == nil && l.opts.Config == "" {
		lookedIn = noConfigFound(path)
	}
	missing.report(f, s, lookedIn)
	if len(f.Errs) > 0 {
		return nil, f.Errs
	}
	return s, nil
}
