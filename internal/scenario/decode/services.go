package decode

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/schema"
)

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

// checkServiceRefs records the services.NAME and sinks.NAME references in a template, checked
// by checkRefs once every service and sink is known.
func (f *file) checkServiceRefs(n *yaml.Node) {
	for _, m := range serviceRef.FindAllStringSubmatchIndex(n.Value, -1) {
		f.serviceRefs = append(f.serviceRefs, serviceUse{n, n.Value[m[2]:m[3]], m[2]})
	}
	for _, m := range sinkRef.FindAllStringSubmatchIndex(n.Value, -1) {
		f.sinkRefs = append(f.sinkRefs, serviceUse{n, n.Value[m[2]:m[3]], m[2]})
	}
}

// service decodes one entry of services: (a command, its env and dir, and when it is ready).
func (f *file) service(name string, n *yaml.Node, source string) *scenario.Service {
	m, ok := f.fields(n, "service "+name, schema.Service)
	if !ok {
		return nil
	}
	s := &scenario.Service{Name: name, Pos: f.Pos(n), Config: source, Ready: scenario.Ready{Timeout: 60 * time.Second}, Replicas: 1}
	f.NamesHint = []string{"port", "replica", "services.NAME.port", "sinks.NAME.url"}
	if v := m["replicas"]; v != nil {
		s.Replicas = f.Int(v, "replicas", 1, scenario.MaxReplicas)
	}
	if m["command"] == nil {
		f.Errf(n, `add command: [go, run, ./server, --addr, "127.0.0.1:{{ port }}"]`, "service %s needs command:", name)
	} else {
		if m["command"].Kind != yaml.SequenceNode {
			f.Errf(m["command"], `write the command as a list: [go, run, ./server]`, "command must be a list of strings")
		} else {
			for _, c := range m["command"].Content {
				s.Command = append(s.Command, f.Template(c, "command", serviceEnv()))
				f.checkServiceRefs(c)
			}
			if len(s.Command) == 0 {
				f.Errf(m["command"], "", "command is empty")
			}
		}
	}
	if v := m["env"]; v != nil {
		s.Env = f.TemplateMap(v, "env", "env", serviceEnv(), f.checkServiceRefs)
	}
	if v := m["dir"]; v != nil {
		s.Dir = f.Dir(v)
	}
	if v := m["ready"]; v != nil {
		rm, ok := f.fields(v, "ready", schema.Ready)
		if ok {
			kinds := 0
			if x := rm["http"]; x != nil {
				s.Ready.HTTP = f.Template(x, "ready.http", serviceEnv())
				f.checkURL(x, "ready.http")
				kinds++
			}
			if x := rm["tcp"]; x != nil {
				s.Ready.TCP = f.Template(x, "ready.tcp", serviceEnv())
				kinds++
			}
			if x := rm["log"]; x != nil {
				var err error
				if s.Ready.Log, err = regexp.Compile(f.Str(x, "ready.log")); err != nil {
					f.Errf(x, "ready.log is a regular expression matched against each output line", "ready.log: %v", err)
				}
				kinds++
			}
			if kinds > 1 {
				f.Errf(v, "", "ready takes one of http, tcp or log")
			}
			if x := rm["timeout"]; x != nil {
				s.Ready.Timeout = f.Duration(x, "ready.timeout")
			}
		}
	}
	return s
}

// serviceEnv is what {{ }} in a service's settings may use: the config's names, and the
// replica the process is (1 to replicas).
func serviceEnv() assert.Env {
	env := configEnv()
	env["replica"] = 0
	return env
}

// checkRefs reports services.NAME and sinks.NAME references to names not defined.
func (f *file) checkRefs(services map[string]*scenario.Service, sinks map[string]*scenario.Sink) {
	check := func(refs []serviceUse, what string, names []string) {
		for _, ref := range refs {
			if slices.Contains(names, ref.name) {
				continue
			}
			hint := what + "s defined: " + strings.Join(names, ", ")
			if len(names) == 0 {
				hint = "define it under " + what + "s: in " + scenario.ConfigName + " or in this file"
			} else if c := assert.Closest(ref.name, names); c != "" {
				hint = fmt.Sprintf("did you mean %q?", c)
			}
			f.ErrAt(f.OffsetPos(ref.n, ref.off), hint, "unknown %s %q", what, ref.name)
		}
	}
	check(f.serviceRefs, "service", slices.Sorted(maps.Keys(services)))
	check(f.sinkRefs, "sink", slices.Sorted(maps.Keys(sinks)))
	f.serviceRefs, f.sinkRefs = nil, nil
}
