package openapi

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds the loader arbitrary documents from a file, as a user's spec arrives: it must
// return a Spec or an error, never panic or hang, and a document's $refs stay under its
// directory whatever it says. Seeded from the reference server's document and this package's
// test documents; crashers are kept in testdata/fuzz.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{spec30, spec31, refSpec("order.yaml"), refSpec("../x.yaml"), refSpec("file:///etc/passwd")} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile(filepath.Join("..", "..", "examples", "refundserver", "openapi.json")); err == nil {
		f.Add(b)
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "order.yaml"), []byte(orderSchema), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "api.yaml")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Load(t.Context(), p, nil)
		if err == nil && s == nil {
			t.Fatal("no spec and no error")
		}
		if err == nil {
			for _, o := range s.Operations {
				if o.Tool == "" || o.InputSchema == nil {
					t.Fatalf("operation without a tool name or schema: %+v", o)
				}
			}
		}
	})
}
