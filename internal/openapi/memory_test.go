package openapi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/openapi/openapigen"
)

// TestLoadMemory guards what loading a large JSON document costs in memory: the bytes
// allocated while loading a generated 8 MB document (responses, examples and components, like
// a real API's) stay within a small multiple of its size. Reading JSON as YAML, as the library
// does, allocated 137 times the size (and held 66 times it at its peak); the pruned JSON load
// allocates about 22 times, peaking near 8 times. Bytes allocated do not depend on the
// machine's pace, only on the code.
func TestLoadMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: generates and loads an 8 MB document")
	}
	doc := openapigen.Generate(8 << 20)
	path := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	size, ops := len(doc), openapigen.Operations(doc)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	spec, err := Load(t.Context(), path, nil)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Operations) != ops {
		t.Fatalf("%d operations, want %d", len(spec.Operations), ops)
	}
	const limit = 40
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("document %d bytes: %d allocated (%.1f×)", size, alloc, float64(alloc)/float64(size))
	if alloc > limit*uint64(size) {
		t.Errorf("loading a %d-byte document allocated %d bytes, %.0f times its size; at most %d times", size, alloc, float64(alloc)/float64(size), limit)
	}
	// What is left once loaded is the Spec: the operations, not the document.
	runtime.GC()
	var held runtime.MemStats
	runtime.ReadMemStats(&held)
	if held.HeapAlloc > before.HeapAlloc && held.HeapAlloc-before.HeapAlloc > 10*uint64(size) {
		t.Errorf("the loaded Spec holds %d bytes, more than 10 times the document", held.HeapAlloc-before.HeapAlloc)
	}
	runtime.KeepAlive(spec)
}

// TestPrunedLoadsAsWhole: what pruning could get wrong loads as the whole document would: a
// $ref to a place outside components, a "$ref" key written with escapes (the scan misses it),
// a component reached only through another, a YAML flow mapping that starts with "{".
func TestPrunedLoadsAsWhole(t *testing.T) {
	const body = `"requestBody":{"content":{"application/json":{"schema":%s}}}`
	tests := map[string]struct{ doc, prop string }{
		"ref outside components": {
			doc:  `{"openapi":"3.0.3","x-defs":{"A":{"type":"object","properties":{"a":{"type":"string"}}}},"paths":{"/a":{"post":{"operationId":"op",` + fmt.Sprintf(body, `{"$ref":"#/x-defs/A"}`) + `}}}}`,
			prop: "a"},
		"escaped ref key": {
			doc:  `{"openapi":"3.0.3","components":{"schemas":{"A":{"type":"object","properties":{"b":{"type":"string"}}}}},"paths":{"/a":{"post":{"operationId":"op",` + fmt.Sprintf(body, `{"\u0024ref":"#/components/schemas/A"}`) + `}}}}`,
			prop: "b"},
		"transitive": {
			doc: `{"openapi":"3.0.3","components":{"requestBodies":{"B":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/A~1x"}}}}},` +
				`"schemas":{"A/x":{"type":"object","properties":{"c":{"type":"string"}}},"Unused":{"type":"string"}},"responses":{"R":{"description":"r"}}},` +
				`"paths":{"/a":{"post":{"operationId":"op","requestBody":{"$ref":"#/components/requestBodies/B"},"responses":{"200":{"$ref":"#/components/responses/R"}}}}}}`,
			prop: "c"},
		"yaml flow mapping": {
			doc:  "{openapi: 3.0.3, paths: {/a: {post: {operationId: op, requestBody: {content: {application/json: {schema: {type: object, properties: {d: {type: string}}}}}}}}}}",
			prop: "d"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := Parse([]byte(tt.doc), name, nil)
			if err != nil {
				t.Fatal(err)
			}
			o, ok := s.Operation("op")
			if !ok {
				t.Fatalf("no operation op: %+v", s.Operations)
			}
			if _, ok := o.InputSchema["properties"].(map[string]any)[tt.prop]; !ok {
				t.Errorf("input schema %v lacks %q", o.InputSchema, tt.prop)
			}
		})
	}
}

// TestLargeInvalidJSON: a large document that starts with "{" but is not JSON is refused as
// invalid JSON at its line and column, without being parsed again as YAML.
func TestLargeInvalidJSON(t *testing.T) {
	doc := openapigen.Generate(2 << 20)
	doc = append(doc[:len(doc)-2], []byte("\n,}")...)
	path := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(t.Context(), path, nil)
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || e.Col != 2 || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("err = %v, want not valid JSON at 2:2", err)
	}
}
