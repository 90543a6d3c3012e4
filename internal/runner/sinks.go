package runner

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/sink"
)

// sinks are the recording servers of one run, keyed like services by (file, name).
type sinks struct {
	byKey map[string]*runningSink
}

type runningSink struct {
	def  *scenario.Sink
	s    *sink.Sink
	lock sync.Mutex // held by the scenario using the sink, so recordings are its own
}

func sinkKey(s *scenario.Sink) string { return s.Config + "\x00" + s.Name }

// startSinks starts every sink of the scenarios once. On error the ones started are closed.
func startSinks(list []*scenario.Scenario) (*sinks, error) {
	ss := &sinks{byKey: map[string]*runningSink{}}
	for _, sc := range list {
		for _, def := range sc.Sinks {
			k := sinkKey(def)
			if ss.byKey[k] != nil {
				continue
			}
			cfg := sink.Config{Name: def.Name, Port: def.Port, Render: renderBody}
			if def.KeyHeader != "" {
				cfg.KeyHeaders = []string{"Idempotency-Key", def.KeyHeader}
			}
			for _, r := range def.Routes {
				cfg.Routes = append(cfg.Routes, sink.Route{
					Name: r.Name, Method: r.Method, Path: r.Path, Status: r.Status, Body: r.JSON, Headers: r.Headers,
					Delay: r.Delay, FailFirst: r.FailFirst, HangFirst: r.HangFirst, DropResponseFirst: r.DropResponseFirst,
				})
			}
			s, err := sink.Start(cfg)
			if err != nil {
				ss.close()
				return nil, fmt.Errorf("%w (%s)", err, def.Pos)
			}
			ss.byKey[k] = &runningSink{def: def, s: s}
		}
	}
	return ss, nil
}

func renderBody(body any, vars map[string]any) (any, error) { return render(body, vars) }

func (ss *sinks) close() {
	if ss == nil {
		return
	}
	for _, s := range ss.byKey {
		s.s.Close()
	}
}

// of returns the running sinks of a scenario, sorted by key so locks are always taken in order.
func (ss *sinks) of(sc *scenario.Scenario) []*runningSink {
	var out []*runningSink
	for _, def := range sc.Sinks {
		if s := ss.byKey[sinkKey(def)]; s != nil {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return sinkKey(out[i].def) < sinkKey(out[j].def) })
	return out
}

// urls is the sinks part of a scenario's template environment: sinks.NAME.url and .port.
func (ss *sinks) urls(sc *scenario.Scenario) map[string]any {
	out := map[string]any{}
	if ss == nil {
		return out
	}
	for name, def := range sc.Sinks {
		s := ss.byKey[sinkKey(def)]
		if s == nil {
			continue
		}
		u := s.s.URL()
		out[name] = map[string]any{"url": u, "port": u[strings.LastIndexByte(u, ':')+1:]}
	}
	return out
}
