package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/proc"
	"github.com/idemtest/idemtest/internal/scenario"
)

// stopGrace is how long a service has to exit after SIGTERM before it is killed.
const stopGrace = 5 * time.Second

// slowStop is how long after SIGTERM a service still running is reported, so that the wait
// until SIGKILL is not silent.
const slowStop = time.Second

// Set is the services of one run, started before the scenarios and stopped after.
type Set struct {
	// byKey holds each service's processes, one per replica in replica order.
	byKey    map[string][]*service
	all      []*service
	sinkURLs func(*scenario.Scenario) map[string]any
	onEvent  func(Event)
}

func (ss *Set) emit(ev Event) {
	if ss.onEvent != nil {
		ss.onEvent(ev)
	}
}

func serviceKey(s *scenario.Service) string { return s.Config + "\x00" + s.Name }

// Start starts every service of the scenarios, each once, and waits until all are ready.
// On error every process already started is stopped. sinkURLs gives a scenario's sinks to the
// templates of its services; onEvent, when set, is told as each service starts, becomes ready
// and, at Stop, stops.
func Start(ctx context.Context, list []*scenario.Scenario, sinkURLs func(*scenario.Scenario) map[string]any, onEvent func(Event)) (*Set, error) {
	ss := &Set{byKey: map[string][]*service{}, sinkURLs: sinkURLs, onEvent: onEvent}
	var held ports
	defer held.release()
	for _, sc := range list {
		for _, def := range sc.Services {
			k := serviceKey(def)
			if ss.byKey[k] != nil {
				continue
			}
			for r := 1; r <= max(def.Replicas, 1); r++ {
				port, err := held.free()
				if err != nil {
					return nil, fmt.Errorf("service %s: find a free port: %w", def.Name, err)
				}
				// The first scenario that uses the service names what its templates see.
				s := &service{def: def, port: port, replica: r, out: proc.NewTail(64 << 10), done: make(chan struct{}), owner: sc}
				ss.byKey[k] = append(ss.byKey[k], s)
				ss.all = append(ss.all, s)
			}
		}
	}
	held.release()
	// Every replica is started and ready before the first trial: a set that is half up would
	// send the retries to a refused connection, not to the other instance.
	var wg sync.WaitGroup
	errs := make([]error, len(ss.all))
	for i, s := range ss.all {
		if err := s.start(ss.envFor(s)); err != nil {
			errs[i] = err
			continue
		}
		ss.emit(Event{Kind: Started, Service: s.name()})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = s.waitReady(ctx, ss.envFor(s)); errs[i] == nil {
				ss.emit(Event{Kind: Ready, Service: s.name()})
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		ss.Stop()
		return nil, err
	}
	return ss, nil
}

// envFor is the template environment of a service's own settings ({{ port }} is its port).
func (ss *Set) envFor(s *service) map[string]any {
	env := ss.TemplateEnv(s.owner)
	env["port"] = s.port
	env["replica"] = s.replica
	return env
}

// TemplateEnv is what a scenario's endpoint, service and probe settings see: services.NAME and
// sinks.NAME by the scenario's own names (its file's definitions win over its config's).
func (ss *Set) TemplateEnv(sc *scenario.Scenario) map[string]any {
	svcs := map[string]any{}
	sinks := map[string]any{}
	if ss != nil {
		for name, def := range sc.Services {
			reps := ss.byKey[serviceKey(def)]
			if len(reps) == 0 {
				continue
			}
			// services.NAME is the first replica (what a probe reads); an endpoint that names
			// the service has an instance per replica (package endpoints reads "replicas").
			svc := replicaEnv(reps[0])
			if len(reps) > 1 {
				all := make([]any, len(reps))
				for i, s := range reps {
					all[i] = replicaEnv(s)
				}
				svc["replicas"] = all
			}
			svcs[name] = svc
		}
		if ss.sinkURLs != nil {
			sinks = ss.sinkURLs(sc)
		}
	}
	return map[string]any{"services": svcs, "sinks": sinks, "port": 0, "replica": 0}
}

// replicaEnv is what templates see of one process of a service.
func replicaEnv(s *service) map[string]any {
	return map[string]any{"port": s.port, "url": fmt.Sprintf("http://127.0.0.1:%d", s.port), "replica": s.replica}
}

// Stop stops every service: SIGTERM to its process group, SIGKILL after the grace period.
func (ss *Set) Stop() {
	if ss == nil {
		return
	}
	var wg sync.WaitGroup
	for _, s := range ss.all {
		if s.cmd == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.mu.Lock()
			s.stopping = true
			s.mu.Unlock()
			ss.emit(Event{Kind: Stopping, Service: s.name()})
			slow := time.AfterFunc(slowStop, func() {
				select {
				case <-s.done:
				default:
					ss.emit(Event{Kind: SlowStop, Service: s.name(), SlowAfter: slowStop, Grace: stopGrace})
				}
			})
			defer slow.Stop()
			proc.Stop(s.cmd.Process.Pid, s.done, stopGrace)
			_ = s.out.Close()
		}()
	}
	wg.Wait()
}

// Marks returns where the output of each service the scenario uses stands now, by name.
func (ss *Set) Marks(sc *scenario.Scenario) map[string]int64 {
	if ss == nil || len(sc.Services) == 0 {
		return nil
	}
	out := map[string]int64{}
	for _, def := range sc.Services {
		for _, s := range ss.byKey[serviceKey(def)] {
			out[s.name()] = s.out.Mark()
		}
	}
	return out
}

// Tails returns the last n bytes each service the scenario uses wrote since its mark: a
// failure shows what the services said while its trial ran, not what other scenarios made
// them say before. A service that wrote nothing in that window is left out.
func (ss *Set) Tails(sc *scenario.Scenario, marks map[string]int64, n int) map[string]string {
	if ss == nil || len(sc.Services) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, def := range sc.Services {
		for _, s := range ss.byKey[serviceKey(def)] {
			if text := strings.TrimRight(proc.LastBytes(s.out.Since(marks[s.name()]), n), "\n"); text != "" {
				out[s.name()] = text
			}
		}
	}
	return out
}

// Dead returns the first service that stopped on its own, if any. A service whose process has
// exited by the time Dead is called is reported, even when its exit has not been waited for yet.
func (ss *Set) Dead() error {
	if ss == nil {
		return nil
	}
	for _, s := range ss.all {
		if s.cmd != nil && proc.Exited(s.cmd.Process.Pid) {
			<-s.done // the process is waitable: its Wait returns now
		}
		if err := s.died(); err != nil {
			return err
		}
	}
	return nil
}
