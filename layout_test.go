package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportsPointOneWay holds the layout the README's table and DESIGN §6 describe: the leaf
// packages import nothing of ours beyond what is listed, and only probe (and the reference
// server's stores) talk to PostgreSQL and Redis.
func TestImportsPointOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/idemtest/idemtest/"
	leaves := map[string][]string{
		"internal/endpoint":    {"internal/netguard", "internal/outcome", "internal/dispatch"},
		"internal/sink":        nil,
		"internal/jsonvalue":   nil,
		"internal/verdict":     {"internal/jsonvalue"},
		"internal/assert":      {"internal/jsonvalue"},
		"internal/outcome":     nil,
		"internal/dispatch":    nil,
		"internal/safejson":    nil,
		"internal/plural":      nil,
		"internal/safefile":    nil,
		"internal/regularfile": nil,
	}
	drivers := []string{"github.com/jackc/pgx", "github.com/redis/go-redis", "modernc.org/sqlite"}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		allowed, leaf := leaves[pkg]
		if leaf {
			seen++
		}
		for _, imp := range fields[1:] {
			ours, isOurs := strings.CutPrefix(imp, mod)
			if leaf && isOurs && !slices.Contains(allowed, ours) {
				t.Errorf("%s imports %s: it may import only %v of ours", pkg, ours, allowed)
			}
			for _, d := range drivers {
				if strings.HasPrefix(imp, d) && pkg != "internal/probe" && pkg != "examples/refundserver" {
					t.Errorf("%s imports %s: only internal/probe talks to databases", pkg, imp)
				}
			}
		}
	}
	if seen != len(leaves) {
		t.Errorf("found %d of the %d leaf packages: the table above is out of date", seen, len(leaves))
	}
}
