// Package testenv says what a test needs from the machine it runs on: a service such as Redis or
// PostgreSQL, a program, an installed npm package. When a need is not met, the test skips and says
// how to meet it; under CI=true, where .ci/run provides everything, it fails instead, so that CI
// never passes by skipping.
package testenv

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// Required reports whether every need must be met: CI=true.
func Required() bool { return os.Getenv("CI") == "true" }

// Unmet skips t with msg, or fails it under CI=true.
func Unmet(t testing.TB, msg string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s (CI=true requires it)", msg)
	}
	t.Skip(msg)
}

// Reachable dials addr (host:port) once and reports why it could not be reached.
func Reachable(name, addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return fmt.Errorf("%s is not reachable at %s; start it (see .ci/run) to run this test: %w", name, addr, err)
	}
	return c.Close()
}

// NeedService skips t (fails it under CI=true) when the service name does not answer at addr.
func NeedService(t testing.TB, name, addr string) {
	t.Helper()
	if err := Reachable(name, addr); err != nil {
		Unmet(t, err.Error())
	}
}
