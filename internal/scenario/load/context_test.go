package load

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenAPIReadEndsWithContext: an endpoint's OpenAPI document, read while its config loads,
// is read under the caller's context, so a command interrupted while it loads stops reading it.
// With the context cancelled first the read reports the cancellation; without, the same files
// load.
func TestOpenAPIReadEndsWithContext(t *testing.T) {
	spec, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "refundserver", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("openapi.json", string(spec))
	write("idemtest.yaml", "endpoints:\n  api:\n    http: {url: \"http://127.0.0.1:1/tools/{tool}\", openapi: openapi.json}\n")
	write("s.yaml", "name: s\nendpoint: api\nsteps:\n  - call_tool: issue_refund\n    args: {accountId: a, amount: 1}\n")
	opts := Options{Config: filepath.Join(dir, "idemtest.yaml"), LookupEnv: func(string) (string, bool) { return "", false }}

	if _, err := Config(context.Background(), dir, opts); err != nil {
		t.Fatalf("config: %v", err)
	}
	if _, err := Scenarios(context.Background(), []string{filepath.Join(dir, "s.yaml")}, opts); err != nil {
		t.Fatalf("scenario: %v", err)
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Config(cancelled, dir, opts); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("config under a cancelled context: err = %v, want the cancellation", err)
	}
}
