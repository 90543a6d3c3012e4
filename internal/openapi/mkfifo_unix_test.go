//go:build unix

package openapi

import (
	"syscall"
	"testing"
)

// mkfifo makes a named pipe at path (Windows has none: the test is skipped there).
func mkfifo(t testing.TB, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}
