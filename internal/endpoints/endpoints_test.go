package endpoints

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	sc, err := scenarioload.Config(".", scenarioload.Options{Config: cfg})
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
