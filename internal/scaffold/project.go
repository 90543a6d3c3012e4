package scaffold

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/idemtest/idemtest/internal/endpoints"
	"github.com/idemtest/idemtest/internal/openapi"
	"github.com/idemtest/idemtest/internal/scenario"
)

// File is one file init writes: where, and what.
type File struct {
	Path string
	Data []byte
}

// Project is what init scaffolds: a scenario for each mutating tool of an endpoint, in Dir.
type Project struct {
	Dir      string
	Endpoint string
	Def      *scenario.Endpoint
	// AdHoc is the endpoint given on the command line (Endpoint is scenario.AdHocName): it is
	// written down next to the scenarios, so that they run as they are.
	AdHoc  scenario.AdHoc
	Fanout int
	Trials int
}

// Files returns the files of the project for the endpoint's tools, as runner.Tools lists them.
func (p Project) Files(tools []endpoints.ToolInfo) ([]File, error) {
	var files []File
	taken := map[string]bool{strings.ToLower(scenario.ConfigName): true}
	for _, t := range tools {
		if !t.Mutating {
			continue
		}
		path := filepath.Join(p.Dir, FileName(t.Name, taken))
		tool := t.Tool
		// A tool the config names idempotent by nature is scaffolded as one that says so.
		tool.Idempotent = tool.Idempotent || p.Def.IsNatural(t.Name)
		files = append(files, File{path, Scenario(tool, Options{Endpoint: p.Endpoint, KeyArg: p.Def.Key.Arg, Fanout: p.Fanout, Trials: p.Trials})})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("endpoint %s has no mutating tools", p.Endpoint)
	}
	if p.Endpoint == scenario.AdHocName {
		// The endpoint exists only on this command line: write it down next to the scenarios,
		// so that they run as they are.
		abs, err := filepath.Abs(p.Dir)
		if err != nil {
			return nil, err
		}
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(abs, wd)
		if err != nil {
			rel = wd
		}
		files = append(files, File{filepath.Join(p.Dir, scenario.ConfigName), Config(p.Endpoint, p.AdHoc, rel)})
	}
	return files, nil
}

// Existing returns the path of the first of files that exists already, or "".
func Existing(files []File) string {
	for _, f := range files {
		if _, err := os.Stat(f.Path); err == nil {
			return f.Path
		}
	}
	return ""
}

// Write creates dir and writes the files to it, calling wrote after each.
func Write(dir string, files []File, wrote func(path string)) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(f.Path, f.Data, 0o644); err != nil {
			return err
		}
		wrote(f.Path)
	}
	return nil
}

// Inline is an endpoint given on the command line as the endpoints: entry of a scenario file,
// for the scenarios check and sweep --write save (no config defines it).
func Inline(name string, a scenario.AdHoc) map[string]any {
	var ep map[string]any
	switch {
	case len(a.MCPCommand) > 0:
		ep = map[string]any{"mcp": map[string]any{"command": a.MCPCommand}}
	case a.MCPURL != "":
		ep = map[string]any{"mcp": map[string]any{"url": a.MCPURL}}
	case a.OpenAPI != "":
		// A file is named absolutely: the saved scenarios may live anywhere.
		src := a.OpenAPI
		if abs, err := filepath.Abs(src); err == nil && !openapi.IsURL(src) {
			src = abs
		}
		h := map[string]any{"openapi": src}
		if a.HTTPURL != "" {
			h["url"] = a.HTTPURL
		}
		ep = map[string]any{"http": h}
	default:
		ep = map[string]any{"http": map[string]any{"url": a.HTTPURL}, "mutating": a.Tools}
	}
	return map[string]any{name: ep}
}
