// Command gen writes schema.json, the JSON Schema of scenario files and idemtest.yaml, from the
// field list in fields.go. It runs from go generate ./internal/scenario/schema.
package main

import (
	"fmt"
	"os"

	"github.com/idemtest/idemtest/internal/scenario/schema"
)

func main() {
	b, err := schema.Generate()
	if err == nil {
		err = os.WriteFile("schema.json", b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "generate schema.json:", err)
		os.Exit(1)
	}
}
