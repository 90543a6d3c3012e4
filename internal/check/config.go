package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/check/battery"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenariogen"
	"github.com/idemtest/idemtest/internal/stateview"
	"github.com/idemtest/idemtest/internal/toolset"
)

// ConfigError is a check: section that does not fit the endpoint (a snapshot tool it does not
// have, or one that is mutating): bad input, found before any mutating call was sent.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

// checkNames refuses --tool names that are not mutating tools of the endpoint, and check.tools
// entries that name no tool the server lists (a typo would silently check the tool with
// synthesised arguments instead of the user's).
func checkNames(selected []string, tools []toolset.ToolInfo, def *scenario.Endpoint, cfg *scenario.CheckConfig) error {
	var all, mutating []string
	for _, t := range tools {
		all = append(all, t.Name)
		if t.Mutating {
			mutating = append(mutating, t.Name)
		}
	}
	for _, name := range selected {
		if slices.Contains(mutating, name) {
			continue
		}
		msg := fmt.Sprintf("--tool %s: endpoint %s has no mutating tool of that name", name, def.Name)
		if c := assert.Closest(name, mutating); c != "" && !slices.Contains(all, name) {
			return &ConfigError{fmt.Sprintf("%s; did you mean %s?", msg, c)}
		}
		if slices.Contains(all, name) {
			msg += " (it is read-only, as idemtest tools shows)"
		}
		return &ConfigError{fmt.Sprintf("%s; its mutating tools: %s", msg, strings.Join(mutating, ", "))}
	}
	if def.MCP == nil && def.HTTP.OpenAPI == nil {
		return nil // a plain HTTP endpoint's check.tools names its tools
	}
	names := make([]string, 0, len(cfg.Tools))
	for n := range cfg.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		if slices.Contains(all, n) {
			continue
		}
		msg := fmt.Sprintf("%s: check.tools.%s: endpoint %s has no tool of that name", cfg.Tools[n].Pos, n, def.Name)
		if c := assert.Closest(n, all); c != "" {
			msg += fmt.Sprintf("; did you mean %s?", c)
		} else {
			msg += "; its tools: " + strings.Join(all, ", ")
		}
		errs = append(errs, errors.New(msg))
	}
	if len(errs) > 0 {
		return &ConfigError{errors.Join(errs...).Error()}
	}
	return nil
}

// snapshots are the state reads: check.snapshot, whose configured read-only calls replace the
// read-only tools found by listing, else those tools.
func snapshots(tools []toolset.ToolInfo, def *scenario.Endpoint, cfg *scenario.CheckConfig) (stateview.Snapshots, error) {
	snap := stateview.Snapshots{Tools: stateview.SnapshotTools(tools), Ignore: def.Ignore}
	if len(cfg.Snapshot) == 0 {
		return snap, nil
	}
	snap.Tools, snap.Args = nil, map[string]map[string]any{}
	listed := def.MCP != nil || def.HTTP.OpenAPI != nil
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	for _, sn := range cfg.Snapshot {
		var info *toolset.ToolInfo
		for i := range tools {
			if tools[i].Name == sn.Tool {
				info = &tools[i]
			}
		}
		switch {
		case info == nil && listed:
			hint := "its tools: " + strings.Join(names, ", ")
			if c := assert.Closest(sn.Tool, names); c != "" {
				hint = fmt.Sprintf("did you mean %q?", c)
			}
			return snap, &ConfigError{fmt.Sprintf("%s: check.snapshot: endpoint %s has no tool %s; %s", sn.Pos, def.Name, sn.Tool, hint)}
		case (info != nil && info.Mutating) || (info == nil && toolset.Mutating(def, sn.Tool, nil)):
			return snap, &ConfigError{fmt.Sprintf("%s: check.snapshot: %s is a mutating tool of endpoint %s; a snapshot must not change anything (name the mutating tools with mutating: on the endpoint)", sn.Pos, sn.Tool, def.Name)}
		}
		snap.Tools = append(snap.Tools, sn.Tool)
		if m, ok := scenariogen.PlainArgs(sn.Args).(map[string]any); ok {
			snap.Args[sn.Tool] = m
		}
	}
	return snap, nil
}

// SelectChecks is the checks --only and --skip select, in matrix order: an id that names no check,
// or a selection that leaves none, is bad usage, refused before anything is started or sent.
func SelectChecks(only, skip []string) ([]string, error) {
	for _, id := range append(append([]string(nil), only...), skip...) {
		if !slices.Contains(battery.IDs, id) {
			return nil, fmt.Errorf("unknown check %q; checks: %s", id, strings.Join(battery.IDs, ", "))
		}
	}
	var out []string
	for _, id := range battery.IDs {
		if (len(only) == 0 || slices.Contains(only, id)) && !slices.Contains(skip, id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--only and --skip leave no check to run")
	}
	return out, nil
}

func selected(tool string, only, skip []string) bool {
	return (len(only) == 0 || slices.Contains(only, tool)) && !slices.Contains(skip, tool)
}

// listTools is the endpoint's tools as idemtest tools shows them; a plain HTTP endpoint without
// a mutating list takes its tools from the check: section.
func listTools(ctx context.Context, env *runner.Env, base *scenario.Scenario, def *scenario.Endpoint, cfg *scenario.CheckConfig) ([]toolset.ToolInfo, error) {
	if def.MCP == nil && def.Mutating == nil && def.HTTP.OpenAPI == nil {
		names := make([]string, 0, len(cfg.Tools))
		for n := range cfg.Tools {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) == 0 {
			return nil, fmt.Errorf("endpoint %s is plain HTTP and cannot list its tools: name them under mutating: on the endpoint or under check: {tools: {NAME: {args: {…}}}}", def.Name)
		}
		var out []toolset.ToolInfo
		for _, n := range names {
			info := toolset.ToolInfo{Mutating: toolset.Mutating(def, n, nil), Natural: toolset.Natural(def, n, nil)}
			info.Name = n
			out = append(out, info)
		}
		return out, nil
	}
	return env.Tools(ctx, base, def.Name)
}
