package testenv

import (
	"bytes"
	"os"
	"strconv"
)

// Marked lists the live processes whose environment holds IDEMTEST_MARKER=marker: what a test
// started, wherever it went (children, setsid daemons), found again to see that none survived.
func Marked(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	want := []byte("IDEMTEST_MARKER=" + marker + "\x00")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && bytes.Contains(st, []byte(") Z ")) {
			continue // dead, not reaped yet
		}
		out = append(out, pid)
	}
	return out
}
