//go:build unix

package main

import (
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdRerunHint takes the command a failure offers to rerun its trial from idemtest's terminal
// output and writes it, as printed, to a shell script: "rerunhint stdout|FILE SCRIPT". The
// output must offer exactly one ("  rerun: idemtest run …"), so that the script runs the
// command a user would copy.
func cmdRerunHint(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: rerunhint stdout|FILE SCRIPT")
	}
	var hints []string
	for _, line := range strings.Split(ts.ReadFile(args[0]), "\n") {
		if cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "rerun: "); ok {
			hints = append(hints, cmd)
		}
	}
	if len(hints) != 1 {
		ts.Fatalf("want one rerun hint in %s, found %d: %q", args[0], len(hints), hints)
	}
	if !strings.HasPrefix(hints[0], "idemtest run ") {
		ts.Fatalf("the rerun hint is not an idemtest run command: %s", hints[0])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(hints[0]+"\n"), 0o644))
}
