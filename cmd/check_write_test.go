package cmd

import (
	"os"
	"path/filepath"
	"testing"
)

// The endpoint --write copies from the config keeps pointing where the config's did: paths the
// config resolved against its own directory are made absolute, templates stay as written.
func TestConfigEndpointPaths(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "idemtest.yaml")
	data := "endpoints:\n" +
		"  api: {http: {openapi: spec/openapi.json, url: \"${BASE}/x\"}}\n" +
		"  tools: {mcp: {command: [node, server.js], dir: srv}}\n" +
		"  remote: {http: {openapi: \"https://example.com/openapi.json\"}}\n"
	if err := os.WriteFile(cfg, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	api, err := configEndpoint(cfg, "api")
	if err != nil {
		t.Fatal(err)
	}
	h := api["http"].(map[string]any)
	if h["openapi"] != filepath.Join(dir, "spec", "openapi.json") || h["url"] != "${BASE}/x" {
		t.Errorf("api: got %v", h)
	}
	tools, err := configEndpoint(cfg, "tools")
	if err != nil {
		t.Fatal(err)
	}
	if m := tools["mcp"].(map[string]any); m["dir"] != filepath.Join(dir, "srv") {
		t.Errorf("tools: got %v", m)
	}
	remote, err := configEndpoint(cfg, "remote")
	if err != nil {
		t.Fatal(err)
	}
	if h := remote["http"].(map[string]any); h["openapi"] != "https://example.com/openapi.json" {
		t.Errorf("remote: got %v", h)
	}
}
