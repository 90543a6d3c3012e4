//go:build unix

package main

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdJSONGet checks one value of a JSON file: jsonget FILE PATH WANT, where PATH is dotted
// (a number indexes an array, # is an array's length) and WANT is the value as compact JSON.
// Tests read machine outputs with a parser, as their consumers do, not with grep.
func cmdJSONGet(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: jsonget FILE PATH WANT")
	}
	var v any
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &v); err != nil {
		ts.Fatalf("jsonget %s: %v", args[0], err)
	}
	for _, k := range strings.Split(args[1], ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			if k == "#" {
				v = float64(len(x))
				continue
			}
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				ts.Fatalf("jsonget %s %s: no element %s of %d", args[0], args[1], k, len(x))
			}
			v = x[i]
		default:
			ts.Fatalf("jsonget %s %s: %s is not in %v", args[0], args[1], k, x)
		}
	}
	got, _ := json.Marshal(v)
	if (string(got) == args[2]) == neg {
		ts.Fatalf("jsonget %s %s = %s, want %s%s", args[0], args[1], got, map[bool]string{true: "not ", false: ""}[neg], args[2])
	}
}
