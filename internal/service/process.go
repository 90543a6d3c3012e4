package service

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/proc"
	"github.com/idemtest/idemtest/internal/scenario"
)

// service is one started process: its definition, its port and its output.
type service struct {
	def   *scenario.Service
	owner *scenario.Scenario
	port  int
	// replica is the process's place among its service's replicas, from 1.
	replica int
	cmd     *exec.Cmd
	out     *proc.Tail
	done    chan struct{}
	// exitErr is set when the process has exited; stopping marks an exit we asked for.
	mu       sync.Mutex
	exitErr  error
	exited   bool
	stopping bool
}

// name is how reports and events call the process: the service's name, with "#N" for replica
// N of a service with several.
func (s *service) name() string {
	if s.def.Replicas > 1 {
		return fmt.Sprintf("%s#%d", s.def.Name, s.replica)
	}
	return s.def.Name
}

// ports hands out unused loopback ports, each one different: the kernel may give a port it
// just handed out and saw closed again, so every port stays held (listened on) until release,
// and the services of one set never share a port.
type ports struct{ held []net.Listener }

// free asks the kernel for an unused loopback port and holds it until release.
func (p *ports) free() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	p.held = append(p.held, ln)
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// release closes the listeners holding the ports, for the services to bind them.
func (p *ports) release() {
	for _, ln := range p.held {
		ln.Close()
	}
	p.held = nil
}

func (s *service) start(env map[string]any) error {
	var argv []string
	for _, t := range s.def.Command {
		v, err := t.Eval(env)
		if err != nil {
			return fmt.Errorf("service %s (%s): command: %w", s.name(), s.def.Pos, err)
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
			return fmt.Errorf("service %s (%s): env %s: %w", s.name(), s.def.Pos, k, err)
		}
		cmd.Env = append(cmd.Env, k+"="+fmt.Sprint(v))
	}
	cmd.Env = append(cmd.Env, fmt.Sprintf("PORT=%d", s.port))
	proc.Isolate(cmd)
	// Should idemtest be killed (SIGKILL, a crash) instead of stopping the service, the
	// shepherd kills the service and everything it started.
	if err := proc.Shepherd(cmd); err != nil {
		return fmt.Errorf("service %s (%s): %w", s.name(), s.def.Pos, err)
	}
	if s.def.Ready.Log != nil {
		s.out.Watch(s.def.Ready.Log)
	}
	// The Tail reads the pipe itself, so that a mark taken after an answer holds every line the
	// service wrote before it.
	w, err := s.out.Writer()
	if err != nil {
		return fmt.Errorf("service %s (%s): %w", s.name(), s.def.Pos, err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close() // the service holds its own copy
	if err != nil {
		return fmt.Errorf("service %s (%s): start %q: %w", s.name(), s.def.Pos, argv[0], err)
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
	return fmt.Errorf("service %s stopped unexpectedly (%s); its last output:\n%s", s.name(), status, indent(s.out.String()))
}

func (s *service) waitReady(ctx context.Context, env map[string]any) error {
	r := s.def.Ready
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	var check func() bool
	var what string
	switch {
	case r.HTTP != nil:
		v, err := r.HTTP.Eval(env)
		if err != nil {
			return fmt.Errorf("service %s: ready.http: %w", s.name(), err)
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
			return fmt.Errorf("service %s: ready.tcp: %w", s.name(), err)
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
	case r.Log != nil:
		what = fmt.Sprintf("printing a line matching %q", r.Log.String())
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
					s.name(), s.def.Pos, r.Timeout, what, indent(s.out.String()))
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (no output)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
