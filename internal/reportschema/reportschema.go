package reportschema

import (
	"embed"
	"fmt"
	"slices"
	"strings"
)

//go:embed schemas/*.json
var files embed.FS

// Kinds are the outputs that have a schema, in the order help lists them.
var Kinds = []string{"run", "check", "sweep", "proxy", "tools", "trace", "audit"}

// Schema is the JSON Schema of the output kind. An unknown kind is an error that lists the kinds.
func Schema(kind string) ([]byte, error) {
	if !slices.Contains(Kinds, kind) {
		return nil, fmt.Errorf("unknown report kind %q: use one of %s", kind, strings.Join(Kinds, ", "))
	}
	return files.ReadFile("schemas/" + kind + ".json")
}
