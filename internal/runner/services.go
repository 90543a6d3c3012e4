package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
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

// services are the processes of one run, started before the scenarios and stopped after.
type services struct {
	byKey    map[string]*service
	sinkURLs func(*scenario.Scenario) map[string]any
	onEvent  func(Event)
}

func (ss *services) emit(ev Event) {
	if ss.onEvent != nil {
		ss.onEvent(ev)
	}
}

type service struct {
	def   *scenario.Service
	owner *scenario.Scenario
	port  int
	cmd   *exec.Cmd
	out   *proc.Tail
	done  chan struct{}
	// exitErr is set when the process has exited; stopping marks an exit we asked for.
	mu       sync.Mutex
	exitErr  error
	exited   bool
	stopping bool
}

func serviceKey(s *scenario.Service) string { return s.Config + "\x00" + s.Name }

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startServices starts every service of the scenarios, each once, and waits until all are ready.
// On error every process already started is stopped. sinkURLs gives a scenario's sinks to the
// templates of its services.
func startServices(ctx context.Context, list []*scenario.Scenario, sinkURLs func(*scenario.Scenario) map[string]any, onEvent func(Event)) (*services, error) {
	ss := &services{byKey: map[string]*service{}, sinkURLs: sinkURLs, onEvent: onEvent}
	var order []*service
	for _, sc := range list {
		for _, def := range sc.Services {
			k := serviceKey(def)
			if ss.byKey[k] != nil {
				continue
			}
			port, err := freePort()
			if err != nil {
				return nil, fmt.Errorf("service %s: find a free port: %w", def.Name, err)
			}
			// The first scenario that uses the service names what its templates see.
			s := &service{def: def, port: port, out: proc.NewTail(64 << 10), done: make(chan struct{}), owner: sc}
			ss.byKey[k] = s
			order = append(order, s)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(order))
	for i, s := range order {
		if err := s.start(ss.envFor(s)); err != nil {
			errs[i] = err
			continue
		}
		ss.emit(Event{Kind: EventServiceStart, Service: s.def.Name})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = s.waitReady(ctx, ss.envFor(s)); errs[i] == nil {
				ss.emit(Event{Kind: EventServiceReady, Service: s.def.Name})
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		ss.stop()
		return nil, err
	}
	return ss, nil
}

// envFor is the template environment of a service's own settings ({{ port }} is its port).
func (ss *services) envFor(s *service) map[string]any {
	env := ss.templateEnv(s.owner)
	env["port"] = s.port
	return env
}

// templateEnv is what a scenario's endpoint, service and probe settings see: services.NAME and
// sinks.NAME by the scenario's own names (its file's definitions win over its config's).
func (ss *services) templateEnv(sc *scenario.Scenario) map[string]any {
	svcs := map[string]any{}
	sinks := map[string]any{}
	if ss != nil {
		for name, def := range sc.Services {
			if s := ss.byKey[serviceKey(def)]; s != nil {
				svcs[name] = map[string]any{"port": s.port, "url": fmt.Sprintf("http://127.0.0.1:%d", s.port)}
			}
		}
		if ss.sinkURLs != nil {
			sinks = ss.sinkURLs(sc)
		}
	}
	return map[string]any{"services": svcs, "sinks": sinks, "port": 0}
}

func (s *service) start(env map[string]any) error {
	var argv []string
	for _, t := range s.def.Command {
		v, err := t.Eval(env)
		if err != nil {
			return fmt.Errorf("service %s (%s): command: %w", s.def.Name, s.def.Pos, err)
		}
		argv = append(argv, fmt.Sprint(v))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	// Commands run in idemtest's working directory unless dir: says otherwise.
	cmd.Dir = s.def.Dir
	cmd.Env = os.Environ()
	for k, t := range s.def.Env {
		v, err := t.Eval(env)
		if err != nil {
			return fmt.Errorf("service %s (%s): env %s: %w", s.def.Name, s.def.Pos, k, err)
		}
		cmd.Env = append(cmd.Env, k+"="+fmt.Sprint(v))
	}
	cmd.Env = append(cmd.Env, fmt.Sprintf("PORT=%d", s.port))
	proc.Isolate(cmd)
	if s.def.Ready.Log != "" {
		s.out.Watch(regexp.MustCompile(s.def.Ready.Log))
	}
	cmd.Stdout = s.out
	cmd.Stderr = s.out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("service %s (%s): start %q: %w", s.def.Name, s.def.Pos, argv[0], err)
	}
	s.cmd = cmd
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.exited, s.exitErr = true, err
		s.mu.Unlock()
		close(s.done)
	}()
	return nil
}

// died reports an exit nobody asked for.
func (s *service) died() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.exited || s.stopping {
		return nil
	}
	status := "exited"
	if s.exitErr != nil {
		status = s.exitErr.Error()
	}
	return fmt.Errorf("service %s stopped unexpectedly (%s); its last output:\n%s", s.def.Name, status, indent(s.out.String()))
}

func (s *service) waitReady(ctx context.Context, env map[string]any) error {
	r := s.def.Ready
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	var check func() bool
	what := "started"
	switch {
	case r.HTTP != nil:
		v, err := r.HTTP.Eval(env)
		if err != nil {
			return fmt.Errorf("service %s: ready.http: %w", s.def.Name, err)
		}
		u := fmt.Sprint(v)
		what = "answering " + u
		client := &http.Client{Timeout: time.Second}
		check = func() bool {
			resp, err := client.Get(u)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode < 500
		}
	case r.TCP != nil:
		v, err := r.TCP.Eval(env)
		if err != nil {
			return fmt.Errorf("service %s: ready.tcp: %w", s.def.Name, err)
		}
		addr := fmt.Sprint(v)
		what = "accepting connections on " + addr
		check = func() bool {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err == nil
		}
	case r.Log != "":
		what = fmt.Sprintf("printing a line matching %q", r.Log)
		check = s.out.Matched
	default:
		return nil
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if check() {
			return nil
		}
		select {
		case <-s.done:
			return s.died()
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("service %s (%s) was not ready within %s (waiting for it to be %s); its output:\n%s",
					s.def.Name, s.def.Pos, r.Timeout, what, indent(s.out.String()))
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stop stops every service: SIGTERM to its process group, SIGKILL after the grace period.
func (ss *services) stop() {
	if ss == nil {
		return
	}
	var wg sync.WaitGroup
	for _, s := range ss.byKey {
		if s.cmd == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.mu.Lock()
			s.stopping = true
			s.mu.Unlock()
			ss.emit(Event{Kind: EventServiceStopping, Service: s.def.Name})
			slow := time.AfterFunc(slowStop, func() {
				select {
				case <-s.done:
				default:
					ss.emit(Event{Kind: EventServiceSlowStop, Service: s.def.Name, SlowAfter: slowStop, Grace: stopGrace})
				}
			})
			defer slow.Stop()
			proc.Stop(s.cmd.Process.Pid, s.done, stopGrace)
		}()
	}
	wg.Wait()
}

// serviceTail is how much of a service's output a failure report shows.
const serviceTail = 2048

// marks returns where the output of each service the scenario uses stands now, by name.
func (ss *services) marks(sc *scenario.Scenario) map[string]int64 {
	if ss == nil || len(sc.Services) == 0 {
		return nil
	}
	out := map[string]int64{}
	for _, def := range sc.Services {
		if s := ss.byKey[serviceKey(def)]; s != nil {
			out[def.Name] = s.out.Mark()
		}
	}
	return out
}

// tails returns the last n bytes each service the scenario uses wrote since its mark: a
// failure shows what the services said while its trial ran, not what other scenarios made
// them say before. A service that wrote nothing in that window is left out.
func (ss *services) tails(sc *scenario.Scenario, marks map[string]int64, n int) map[string]string {
	if ss == nil || len(sc.Services) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, def := range sc.Services {
		s := ss.byKey[serviceKey(def)]
		if s == nil {
			continue
		}
		if text := strings.TrimRight(lastBytes(s.out.Since(marks[def.Name]), n), "\n"); text != "" {
			out[def.Name] = text
		}
	}
	return out
}

// dead returns the first service that stopped on its own, if any.
func (ss *services) dead() error {
	if ss == nil {
		return nil
	}
	for _, s := range ss.byKey {
		if err := s.died(); err != nil {
			return err
		}
	}
	return nil
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (no output)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
