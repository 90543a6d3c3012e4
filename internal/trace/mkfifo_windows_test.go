//go:build windows

package trace

import "testing"

// mkfifo skips the test: Windows has no named pipe in the file system.
func mkfifo(t testing.TB, _ string) {
	t.Helper()
	t.Skip("no named pipes in the file system on Windows")
}
