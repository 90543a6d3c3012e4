package scaffold

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/idemtest/idemtest/internal/openapi"
	"github.com/idemtest/idemtest/internal/safefile"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/toolset"
)

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

// Files returns the files of the project for the endpoint's tools, as runner.Tools lists them,
// named for safefile.Write into Dir.
func (p Project) Files(tools []toolset.ToolInfo) ([]safefile.File, error) {
	var files []safefile.File
	for _, t := range tools {
		if !t.Mutating {
			continue
		}
		tool := t.Tool
		// A tool the config names idempotent by nature is scaffolded as one that says so.
		tool.Idempotent = tool.Idempotent || p.Def.IsNatural(t.Name)
		files = append(files, safefile.File{Name: t.Name, Ext: ".yaml",
			Data: Scenario(tool, Options{Endpoint: p.Endpoint, KeyArg: p.Def.Key.Arg, Fanout: p.Fanout, Trials: p.Trials})})
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
		var doc string
		if p.AdHoc.OpenAPI != "" && !openapi.IsURL(p.AdHoc.OpenAPI) {
			// The config names its document relative to itself.
			if doc, err = filepath.Abs(p.AdHoc.OpenAPI); err != nil {
				return nil, err
			}
			if r, err := filepath.Rel(abs, doc); err == nil {
				doc = r
			}
		}
		var natural []string
		for _, t := range tools {
			if t.Mutating && (t.Natural || t.Idempotent) {
				natural = append(natural, t.Name)
			}
		}
		files = append(files, safefile.File{Name: strings.TrimSuffix(scenario.ConfigName, ".yaml"), Ext: ".yaml", Fixed: true,
			Data: Config(p.Endpoint, p.AdHoc, rel, doc, natural)})
	}
	return files, nil
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

// HasPlaceholder reports whether a file init wrote holds a value for the user to fill in (a
// quoted scenario.Placeholder; the header comment that explains them is not one).
func HasPlaceholder(data []byte) bool {
	return bytes.Contains(data, []byte(`"`+scenario.Placeholder))
}
