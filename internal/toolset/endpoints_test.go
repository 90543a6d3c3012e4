package toolset

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/scenario"
	scenarioload "github.com/idemtest/idemtest/internal/scenario/load"
)

// TestOneEndpointPerEnvironment: a definition is built once per template environment; what its
// templates name is checked against the hosts it may reach; each stdio MCP server's standard
// error is kept under its endpoint's name.
func TestOneEndpointPerEnvironment(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "idemtest.yaml")
	yaml := `endpoints:
  api:
    http: {url: "http://{{ services.api.host }}/tools/{tool}"}
  srv:
    mcp: {command: [sh, -c, "exit 0"]}
services:
  api: {command: [sh, -c, "sleep 1"], ready: {tcp: "127.0.0.1:{{ port }}"}}
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenarioload.Config(context.Background(), ".", scenarioload.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	host := "127.0.0.1:1"
	s := New(context.Background(), func(*scenario.Scenario) map[string]any {
		return map[string]any{"services": map[string]any{"api": map[string]any{"host": host}}}
	})
	defer s.Close()
	first, def, err := s.Get(sc, "api")
	if err != nil {
		t.Fatal(err)
	}
	if def != sc.Endpoints["api"] {
		t.Errorf("Get gave the definition %v", def)
	}
	if again, _, _ := s.Get(sc, "api"); again != first {
		t.Error("a second Get built the endpoint again")
	}
	host = "127.0.0.1:2"
	if other, _, _ := s.Get(sc, "api"); other == first {
		t.Error("another environment got the same endpoint")
	}
	host = "example.com:80"
	if _, _, err := s.Get(sc, "api"); err == nil || !strings.Contains(err.Error(), "--allow-host example.com") {
		t.Errorf("a host not allowed: %v", err)
	}
	if tails := s.Stderr(sc); len(tails) != 0 {
		t.Errorf("standard errors before any MCP server: %v", tails)
	}
	if _, _, err := s.Get(sc, "srv"); err != nil {
		t.Fatal(err)
	}
	if tails := s.Stderr(sc); len(tails) != 1 || tails["srv"] == nil {
		t.Errorf("standard errors: %v", tails)
	}
}

// TestInstances: an endpoint whose URL names a service with replicas has an instance per
// replica, in order; one that names no replicated service, or a service of one, is a single
// endpoint; urls: name the instances directly, each checked against the hosts allowed.
func TestInstances(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "idemtest.yaml")
	yaml := `endpoints:
  set:
    http: {url: "http://127.0.0.1:{{ services.api.port }}/tools/{tool}"}
  mcpset:
    mcp: {url: "http://127.0.0.1:{{ services.api.port }}/mcp"}
  other:
    http: {url: "http://127.0.0.1:{{ services.db.port }}/tools/{tool}"}
  named:
    http: {urls: ["http://127.0.0.1:1/a/{tool}", "http://127.0.0.1:2/b/{tool}", "http://localhost:3/c/{tool}"]}
  refused:
    http: {urls: ["http://127.0.0.1:1/a/{tool}", "http://{{ services.db.host }}/b/{tool}"]}
services:
  api: {command: [sh, -c, "sleep 1"], replicas: 2}
  db: {command: [sh, -c, "sleep 1"]}
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenarioload.Config(context.Background(), ".", scenarioload.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	replica := func(port int) map[string]any {
		return map[string]any{"port": port, "url": fmt.Sprintf("http://127.0.0.1:%d", port)}
	}
	api := replica(7001)
	api["replicas"] = []any{replica(7001), replica(7002)}
	db := replica(8001)
	db["host"] = "example.com:80"
	s := New(context.Background(), func(*scenario.Scenario) map[string]any {
		return map[string]any{"services": map[string]any{"api": api, "db": db}}
	})
	defer s.Close()
	for _, tc := range []struct {
		name string
		want []endpoint.Instance // nil: a single endpoint
	}{
		{"set", []endpoint.Instance{{Index: 1, URL: "http://127.0.0.1:7001/tools/{tool}"}, {Index: 2, URL: "http://127.0.0.1:7002/tools/{tool}"}}},
		{"mcpset", []endpoint.Instance{{Index: 1, URL: "http://127.0.0.1:7001/mcp"}, {Index: 2, URL: "http://127.0.0.1:7002/mcp"}}},
		{"other", nil},
		{"named", []endpoint.Instance{{Index: 1, URL: "http://127.0.0.1:1/a/{tool}"}, {Index: 2, URL: "http://127.0.0.1:2/b/{tool}"}, {Index: 3, URL: "http://localhost:3/c/{tool}"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep, _, err := s.Get(sc, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			set, isSet := ep.(endpoint.InstanceSet)
			if tc.want == nil {
				if isSet {
					t.Fatalf("a set of %v, want a single endpoint", set.Instances())
				}
				return
			}
			if !isSet {
				t.Fatalf("a single endpoint, want instances %v", tc.want)
			}
			if got := set.Instances(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("instances %v, want %v", got, tc.want)
			}
			if set.Member(0) == set.Member(1) {
				t.Error("two instances share one endpoint")
			}
			if _, lists := ep.(endpoint.ToolLister); lists != (tc.name == "mcpset") {
				t.Errorf("lists its tools: %v", lists)
			}
		})
	}
	if _, _, err := s.Get(sc, "refused"); err == nil || !strings.Contains(err.Error(), "endpoint refused (instance 2)") || !strings.Contains(err.Error(), "--allow-host example.com") {
		t.Errorf("an instance on a host not allowed: %v", err)
	}
}
