//go:build unix

package main

import (
	"encoding/json"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdJSONSame compares two JSON reports by what they judged: jsonsame A B parses both and
// compares them with what differs from one run of the same suite to the next removed (instants,
// durations, sessions, keys, ids and the answers and arguments that carry them, the concurrent
// check's round counts), arrays of tools sorted by name. With !, they must differ.
func cmdJSONSame(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: jsonsame A B")
	}
	var a, b any
	for i, p := range args {
		var v any
		if err := json.Unmarshal([]byte(ts.ReadFile(p)), &v); err != nil {
			ts.Fatalf("jsonsame: %s: %v", p, err)
		}
		v = verdictOnly(v)
		if i == 0 {
			a = v
		} else {
			b = v
		}
	}
	same := reflect.DeepEqual(a, b)
	if same == neg {
		ja, _ := json.MarshalIndent(a, "", " ")
		jb, _ := json.MarshalIndent(b, "", " ")
		ts.Logf("%s:\n%s\n%s:\n%s", args[0], ja, args[1], jb)
		if neg {
			ts.Fatalf("jsonsame: %s and %s judged the same", args[0], args[1])
		}
		ts.Fatalf("jsonsame: %s and %s differ", args[0], args[1])
	}
}

// volatile are the report fields that differ between two runs of the same suite.
var volatile = map[string]bool{
	"start": true, "duration_us": true, "duration_ns": true, "start_us": true, "sent_us": true,
	"answered_us": true, "session": true, "key": true, "idemtest_version": true, "answer": true,
	"answer_bytes": true, "arguments": true, "args": true, "spread_us": true, "rounds": true,
	"overlapped": true, "spread_p50_us": true, "spread_max_us": true, "details": true,
}

// hexID is a session, a key's session part or an id a server made up.
var hexID = regexp.MustCompile(`[0-9a-f]{12,}`)

func verdictOnly(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if !volatile[k] {
				out[k] = verdictOnly(x)
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(v))
		for _, x := range v {
			out = append(out, verdictOnly(x))
		}
		sort.SliceStable(out, func(i, j int) bool { return toolOf(out[i]) < toolOf(out[j]) })
		return out
	case string:
		return hexID.ReplaceAllString(v, "ID")
	}
	return v
}

// toolOf is the tool a row of a check report names ("" for anything else, which keeps its order).
func toolOf(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if _, cells := m["cells"]; !cells {
		return ""
	}
	s, _ := m["tool"].(string)
	return strings.ToLower(s)
}
