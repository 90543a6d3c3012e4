package scaffold

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/idemtest/idemtest/internal/scenario"
)

// Config returns an idemtest.yaml that defines an endpoint given on the command line under
// name, so that the scenarios written next to it run as they are. workDir is where init ran,
// relative to the file: a stdio command runs there, as it did for init; an OpenAPI document
// given as a file is named relative to the file too (openapiFile; "" for a URL). natural are
// the mutating tools that said they are idempotent by nature (MCP idempotentHint, PUT or DELETE
// in the document), written down so that the decision can be read and edited.
func Config(name string, a scenario.AdHoc, workDir, openapiFile string, natural []string) []byte {
	var b strings.Builder
	b.WriteString("# Written by idemtest init: the endpoint the generated scenarios call.\n")
	b.WriteString("endpoints:\n")
	fmt.Fprintf(&b, "  %s:\n", yamlKey(name))
	switch {
	case len(a.MCPCommand) > 0:
		fmt.Fprintf(&b, "    mcp:\n      command: %s\n      dir: %s\n", list(a.MCPCommand), quote(filepath.ToSlash(workDir)))
		b.WriteString("    key: {arg: idempotencyKey}\n")
	case a.MCPURL != "":
		fmt.Fprintf(&b, "    mcp: {url: %s}\n", quote(a.MCPURL))
		b.WriteString("    key: {arg: idempotencyKey}\n")
	case a.OpenAPI != "":
		src := a.OpenAPI
		if openapiFile != "" {
			src = filepath.ToSlash(openapiFile)
		}
		fmt.Fprintf(&b, "    http:\n      openapi: %s\n", quote(src))
		if a.HTTPURL != "" {
			fmt.Fprintf(&b, "      url: %s\n", quote(a.HTTPURL))
		}
		b.WriteString("    # GET, HEAD and OPTIONS are read-only; the other methods are mutating and get a key.\n")
		b.WriteString("    key: {header: Idempotency-Key}\n")
	case a.HTTPURL != "":
		fmt.Fprintf(&b, "    http: {url: %s}\n", quote(a.HTTPURL))
		b.WriteString("    key: {header: Idempotency-Key}\n")
		fmt.Fprintf(&b, "    mutating: %s\n", list(a.Tools))
	}
	if len(natural) > 0 {
		b.WriteString("    # Idempotent by nature (MCP idempotentHint; PUT or DELETE in an OpenAPI document): their\n")
		b.WriteString("    # answers are no evidence of executions, and their scenarios expect no replays.\n")
		fmt.Fprintf(&b, "    natural: %s\n", list(natural))
	}
	if len(a.AllowHosts) > 0 {
		fmt.Fprintf(&b, "allow_hosts: %s\n", list(a.AllowHosts))
	}
	return []byte(b.String())
}

// list writes strings as a YAML flow sequence of double-quoted scalars.
func list(items []string) string {
	parts := make([]string, len(items))
	for i, p := range items {
		parts[i] = quote(p)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
