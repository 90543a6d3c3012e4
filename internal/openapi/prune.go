package openapi

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
)

// A JSON document is pruned before the library reads it: the library holds every part of a
// document in memory many times over (about 115 times a JSON document's size when it parsed
// JSON as YAML), yet idemtest maps only the operations' names, parameters and request bodies.
// prune keeps, of a JSON document, the fields Spec is made of (openapi, servers, and of every
// path item its $ref, parameters and operations, of every operation its operationId, summary,
// parameters and request body) and of the components only those a kept part reaches through
// $refs, transitively. Responses, examples of responses, callbacks, webhooks, security and the
// components nothing kept names are dropped unread.

// operationKeys are the fields of a path item that hold operations.
var operationKeys = map[string]bool{
	"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true,
	"patch": true, "trace": true, "query": true,
}

// keptOperationFields are the fields of an operation that mapOperation reads.
var keptOperationFields = []string{"operationId", "summary", "parameters", "requestBody"}

// prune returns the pruned document, or data itself when it cannot be pruned safely: a local
// $ref that leads outside components, or to a component the document lacks. An error is data
// that is not one JSON object.
func prune(data []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, k := range []string{"openapi", "servers"} {
		if v, ok := top[k]; ok {
			out[k] = v
		}
	}
	var roots [][]byte
	if raw, ok := top["paths"]; ok {
		var paths map[string]json.RawMessage
		if json.Unmarshal(raw, &paths) != nil {
			return data, nil // not an object: the library says what is wrong
		}
		delete(top, "paths") // each copy is let go once read: the document is held whole once
		kept := make(map[string]any, len(paths))
		for p, raw := range paths {
			paths[p] = nil
			var item map[string]json.RawMessage
			if json.Unmarshal(raw, &item) != nil {
				return data, nil
			}
			k := map[string]any{}
			for f, v := range item {
				switch {
				case f == "$ref" || f == "parameters":
					k[f] = v
					roots = append(roots, v)
				case operationKeys[f]:
					var op map[string]json.RawMessage
					if json.Unmarshal(v, &op) != nil {
						return data, nil
					}
					ko := map[string]json.RawMessage{}
					for _, of := range keptOperationFields {
						if ov, ok := op[of]; ok {
							ko[of] = ov
							roots = append(roots, ov)
						}
					}
					k[f] = ko
				}
			}
			kept[p] = k
		}
		out["paths"] = kept
	}
	if raw, ok := top["components"]; ok {
		var comps map[string]map[string]json.RawMessage
		delete(top, "components")
		if json.Unmarshal(raw, &comps) != nil {
			return data, nil
		}
		kept, ok := reached(comps, roots)
		if !ok {
			return data, nil
		}
		out["components"] = kept
	}
	return json.Marshal(out)
}

// reached returns the components the roots reach through local $refs, transitively; false when
// a local $ref leads anywhere else.
func reached(comps map[string]map[string]json.RawMessage, roots [][]byte) (map[string]map[string]json.RawMessage, bool) {
	kept := map[string]map[string]json.RawMessage{}
	queue := roots
	for len(queue) > 0 {
		raw := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, ref := range localRefs(raw) {
			kind, name, ok := componentRef(ref)
			if !ok {
				return nil, false
			}
			v, ok := comps[kind][name]
			if !ok {
				return nil, false
			}
			if _, seen := kept[kind][name]; seen {
				continue
			}
			if kept[kind] == nil {
				kept[kind] = map[string]json.RawMessage{}
			}
			kept[kind][name] = v
			queue = append(queue, v)
		}
	}
	return kept, true
}

var refKey = []byte(`"$ref"`)

// localRefs lists the values of the "$ref" fields in raw that name a place in this document
// ("#/…"). A "$ref" that is a string value rather than a key is skipped; a key written with
// escapes is missed, and the library then reports the reference it cannot resolve, which
// makes the caller read the whole document.
func localRefs(raw []byte) []string {
	var refs []string
	for {
		i := bytes.Index(raw, refKey)
		if i < 0 {
			return refs
		}
		raw = raw[i+len(refKey):]
		rest := bytes.TrimLeft(raw, " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			continue
		}
		rest = bytes.TrimLeft(rest[1:], " \t\r\n")
		if len(rest) == 0 || rest[0] != '"' {
			continue
		}
		end := 1
		for end < len(rest) && rest[end] != '"' {
			if rest[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(rest) {
			return refs
		}
		var s string
		if json.Unmarshal(rest[:end+1], &s) == nil && strings.HasPrefix(s, "#") {
			refs = append(refs, s)
		}
		raw = rest[end+1:]
	}
}

// componentRef splits "#/components/KIND/NAME[/…]" into KIND and NAME, the JSON pointer's and
// the URL fragment's escapes undone.
func componentRef(ref string) (kind, name string, ok bool) {
	frag := strings.TrimPrefix(ref, "#")
	if u, err := url.PathUnescape(frag); err == nil {
		frag = u
	}
	parts := strings.Split(frag, "/")
	if len(parts) < 4 || parts[0] != "" || parts[1] != "components" {
		return "", "", false
	}
	unescape := strings.NewReplacer("~1", "/", "~0", "~")
	return unescape.Replace(parts[2]), unescape.Replace(parts[3]), true
}
