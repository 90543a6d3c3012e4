package service

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/proc"
	"github.com/idemtest/idemtest/internal/scenario"
)

// tmpl compiles a template of a service's settings.
func tmpl(t *testing.T, s string) *assert.Template {
	t.Helper()
	tp, err := assert.CompileTemplate(s, assert.Env{"port": 0, "replica": 0, "services": map[string]any{}, "sinks": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// scenarioWith is a scenario that uses one service, named svc, running argv.
func scenarioWith(t *testing.T, argv []string, ready scenario.Ready, env map[string]string) *scenario.Scenario {
	t.Helper()
	def := &scenario.Service{Name: "svc", Pos: scenario.Pos{File: "s.yaml", Line: 3, Col: 5}, Config: "s.yaml", Ready: ready,
		Env: map[string]*assert.Template{}}
	for _, a := range argv {
		def.Command = append(def.Command, tmpl(t, a))
	}
	for k, v := range env {
		def.Env[k] = tmpl(t, v)
	}
	return &scenario.Scenario{Name: "uses svc", Services: map[string]*scenario.Service{"svc": def}}
}

// events records the events a Set tells, in order.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, string(ev.Kind)+" "+ev.Service)
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.list, ", ")
}

// TestStartFailures: a service that does not start, dies before it is ready or never becomes
// ready is an error that names it and shows what it printed.
func TestStartFailures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		argv  []string
		ready func(t *testing.T) scenario.Ready
		want  []string
	}{
		{
			name: "never ready",
			argv: []string{"sh", "-c", "echo about to hang; exec sleep 60"},
			ready: func(t *testing.T) scenario.Ready {
				return scenario.Ready{TCP: tmpl(t, "127.0.0.1:{{ port }}"), Timeout: 300 * time.Millisecond}
			},
			want: []string{"service svc (s.yaml:3:5) was not ready within 300ms (waiting for it to be accepting connections on 127.0.0.1:", "    about to hang"},
		},
		{
			name: "exits before it is ready",
			argv: []string{"sh", "-c", "echo bye; exit 3"},
			ready: func(t *testing.T) scenario.Ready {
				return scenario.Ready{Log: regexp.MustCompile("^never printed$"), Timeout: time.Minute}
			},
			want: []string{"service svc stopped unexpectedly (exit status 3); its last output:\n    bye"},
		},
		{
			name:  "command not found",
			argv:  []string{"/nonexistent/idemtest-service"},
			ready: func(t *testing.T) scenario.Ready { return scenario.Ready{Timeout: time.Minute} },
			want:  []string{`service svc (s.yaml:3:5): start "/nonexistent/idemtest-service"`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenarioWith(t, tc.argv, tc.ready(t), nil)
			var evs events
			set, err := Start(context.Background(), []*scenario.Scenario{sc}, nil, evs.add)
			if err == nil {
				set.Stop()
				t.Fatal("Start succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
			if strings.Contains(evs.String(), string(Ready)) {
				t.Errorf("events %s: a service that failed was reported ready", &evs)
			}
		})
	}
}

// TestLifecycle: a started service sees its port and the scenario's sinks in its templates,
// is ready when its log line comes, shows the output written since a mark, is reported dead
// when it stops on its own, and its events come in order.
func TestLifecycle(t *testing.T) {
	sc := scenarioWith(t, []string{"sh", "-c", "echo port {{ port }}; printenv SINK_URL; exec sleep 60"},
		scenario.Ready{Log: regexp.MustCompile("^http://sink.test/$"), Timeout: time.Minute},
		map[string]string{"SINK_URL": "{{ sinks.s.url }}"})
	sinkURLs := func(*scenario.Scenario) map[string]any {
		return map[string]any{"s": map[string]any{"url": "http://sink.test/"}}
	}
	var evs events
	set, err := Start(context.Background(), []*scenario.Scenario{sc}, sinkURLs, evs.add)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		set.Stop()
		if got, want := evs.String(), "service-start svc, service-ready svc, service-stopping svc"; got != want {
			t.Errorf("events %q, want %q", got, want)
		}
	})

	svcs := set.TemplateEnv(sc)["services"].(map[string]any)
	port := svcs["svc"].(map[string]any)["port"].(int)
	if got := svcs["svc"].(map[string]any)["url"]; got != fmt.Sprintf("http://127.0.0.1:%d", port) {
		t.Errorf("services.svc.url = %v", got)
	}
	if got, want := set.Tails(sc, nil, 2048)["svc"], fmt.Sprintf("port %d\nhttp://sink.test/", port); got != want {
		t.Errorf("tail %q, want %q", got, want)
	}
	if tails := set.Tails(sc, set.Marks(sc), 2048); len(tails) != 0 {
		t.Errorf("tails since a mark taken after the last write: %q", tails)
	}
	if err := set.Dead(); err != nil {
		t.Fatalf("a running service is dead: %v", err)
	}

	s := set.byKey[serviceKey(sc.Services["svc"])][0]
	proc.Kill(s.cmd.Process.Pid)
	<-s.done
	if err := set.Dead(); err == nil || !strings.Contains(err.Error(), "service svc stopped unexpectedly (signal: killed)") {
		t.Errorf("after the kill: %v", err)
	}
}

// TestReplicas: a service with replicas runs one process per replica, each on its own port and
// told its replica number, all ready before Start returns; templates see the first replica as
// services.NAME and every replica under services.NAME.replicas; Stop stops every process.
func TestReplicas(t *testing.T) {
	sc := scenarioWith(t, []string{"sh", "-c", "echo replica {{ replica }} port {{ port }}; exec sleep 60"},
		scenario.Ready{Log: regexp.MustCompile("^replica"), Timeout: time.Minute}, nil)
	sc.Services["svc"].Replicas = 3
	var evs events
	set, err := Start(context.Background(), []*scenario.Scenario{sc}, nil, evs.add)
	if err != nil {
		t.Fatal(err)
	}
	procs := set.byKey[serviceKey(sc.Services["svc"])]
	t.Cleanup(func() {
		set.Stop()
		for _, s := range procs {
			select {
			case <-s.done:
			default:
				t.Errorf("replica %d still running after Stop", s.replica)
			}
		}
	})
	if len(procs) != 3 {
		t.Fatalf("%d processes, want 3", len(procs))
	}
	svc := set.TemplateEnv(sc)["services"].(map[string]any)["svc"].(map[string]any)
	reps, _ := svc["replicas"].([]any)
	if len(reps) != 3 {
		t.Fatalf("services.svc.replicas = %v, want 3 entries", svc["replicas"])
	}
	ports := map[int]bool{}
	tails := set.Tails(sc, nil, 2048)
	for i, r := range reps {
		m := r.(map[string]any)
		port := m["port"].(int)
		ports[port] = true
		if m["replica"] != i+1 {
			t.Errorf("replica %d says it is %v", i+1, m["replica"])
		}
		name := fmt.Sprintf("svc#%d", i+1)
		if got, want := tails[name], fmt.Sprintf("replica %d port %d", i+1, port); got != want {
			t.Errorf("output of %s = %q, want %q", name, got, want)
		}
		if !strings.Contains(evs.String(), "service-ready "+name) {
			t.Errorf("events %s: %s was not reported ready", &evs, name)
		}
	}
	if len(ports) != 3 {
		t.Errorf("replicas share ports: %v", reps)
	}
	if svc["port"] != reps[0].(map[string]any)["port"] {
		t.Errorf("services.svc.port = %v, want the first replica's", svc["port"])
	}
}
