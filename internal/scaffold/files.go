package scaffold

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/idemtest/idemtest/internal/scenario"
)

// FileName is a safe file name for a tool's scenario: letters, digits, '.', '_' and '-' are
// kept, anything else (path separators, spaces, control characters) becomes '_'; taken lists
// names already used, so that two tools never share a file.
func FileName(tool string, taken map[string]bool) string {
	base := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			return r
		}
		return '_'
	}, tool)
	base = strings.TrimLeft(base, ".")
	if len(base) > 100 {
		base = base[:100]
	}
	if base == "" {
		base = "tool"
	}
	name := base + ".yaml"
	for i := 2; taken[strings.ToLower(name)]; i++ {
		name = fmt.Sprintf("%s_%d.yaml", base, i)
	}
	taken[strings.ToLower(name)] = true
	return name
}

// Config returns an idemtest.yaml that defines an endpoint given on the command line under
// name, so that the scenarios written next to it run as they are. workDir is where init ran,
// relative to the file: a stdio command runs there, as it did for init.
func Config(name string, a scenario.AdHoc, workDir string) []byte {
	var b strings.Builder
	b.WriteString("# Written by idemtest init: the endpoint the generated scenarios call.\n")
	b.WriteString("endpoints:\n")
	fmt.Fprintf(&b, "  %s:\n", yamlKey(name))
	switch {
	case len(a.MCPCommand) > 0:
		parts := make([]string, len(a.MCPCommand))
		for i, p := range a.MCPCommand {
			parts[i] = quote(p)
		}
		fmt.Fprintf(&b, "    mcp:\n      command: [%s]\n      dir: %s\n", strings.Join(parts, ", "), quote(filepath.ToSlash(workDir)))
		b.WriteString("    key: {arg: idempotencyKey}\n")
	case a.MCPURL != "":
		fmt.Fprintf(&b, "    mcp: {url: %s}\n", quote(a.MCPURL))
		b.WriteString("    key: {arg: idempotencyKey}\n")
	case a.HTTPURL != "":
		fmt.Fprintf(&b, "    http: {url: %s}\n", quote(a.HTTPURL))
		b.WriteString("    key: {header: Idempotency-Key}\n")
		tools := make([]string, len(a.Tools))
		for i, t := range a.Tools {
			tools[i] = quote(t)
		}
		fmt.Fprintf(&b, "    mutating: [%s]\n", strings.Join(tools, ", "))
	}
	if len(a.AllowHosts) > 0 {
		hosts := make([]string, len(a.AllowHosts))
		for i, h := range a.AllowHosts {
			hosts[i] = quote(h)
		}
		fmt.Fprintf(&b, "allow_hosts: [%s]\n", strings.Join(hosts, ", "))
	}
	return []byte(b.String())
}
