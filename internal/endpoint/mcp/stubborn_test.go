package mcp

import (
	"fmt"
	"os"
	"os/exec"
)

// spawnStubborn, in the test MCP server, starts what a server may leave behind: a shell that
// ignores SIGTERM, with a child that ignores it too and a daemon that left its session (setsid).
// Their output goes nowhere, so the MCP stream stays the server's.
func spawnStubborn() {
	c := exec.Command("sh", "-c", `trap '' TERM; setsid sh -c "trap '' TERM; sleep 1000; :" & (trap '' TERM; sleep 1000; :) & wait`)
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "spawn:", err)
	}
}
