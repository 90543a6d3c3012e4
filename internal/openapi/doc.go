// Package openapi reads an OpenAPI 3.0, 3.1 or 3.2 document and maps each operation to a tool:
// its name, method and path, whether idemtest treats it as mutating, where the idempotency key
// goes, and how a call's arguments split into path, query and body.
//
//	spec, err := openapi.Load(ctx, "openapi.yaml", nil)
//	for _, op := range spec.Operations {
//		fmt.Println(op.Tool, op.Method, op.Path, op.Mutating, op.KeyHeader)
//	}
//
// Loading uses github.com/getkin/kin-openapi; every URL it reads (the document, an external
// $ref) goes through the outbound policy of internal/netguard. A JSON document is first pruned
// to the operations, their parameters and request bodies and the components these reach (see
// prune), and decoded as JSON: loading a 38 MB document peaks near 7 times its size in memory.
package openapi
