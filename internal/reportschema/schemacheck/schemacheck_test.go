package schemacheck_test

import (
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/reportschema"
	"github.com/idemtest/idemtest/internal/reportschema/schemacheck"
)

// good is a small valid document of each kind; the table below breaks each in one place.
var good = map[string]string{
	"run": `{"version": 1, "tool": "idemtest", "idemtest_version": "dev", "start": "2026-12-02T10:00:00Z",
		"duration_us": 12.5, "interrupted": false,
		"summary": {"passed": 1, "failed": 0, "errored": 0, "skipped": 0, "interrupted": 0, "metrics": ` + metrics + `},
		"scenarios": [{"name": "s", "file": "s.yaml", "line": 1, "tags": [], "status": "passed", "trials": 1,
			"trials_run": 1, "trials_passed": 1, "trials_failed": 0, "fanouts": 0, "fanouts_overlapped": 0,
			"duration_us": 3, "metrics": ` + metrics + `, "history": [{"index": 1, "session": "ab", "passed": true,
			"duration_us": 2, "calls": [{"step": "first", "tool": "t", "endpoint": "e", "copy": 0, "attempt": 1,
			"key": "ab-0", "arguments": {}, "outcome": "ok", "status": 200, "replayed": false, "conflict": false,
			"lost": false, "answer": {"id": 1}, "start_us": 0, "duration_us": 1}]}]}]}`,
	"check": `{"idemtest_version": "dev", "failed": false, "endpoint": "e", "profile": "ietf", "checks": ["replay"],
		"tools": [{"tool": "t", "cells": [{"check": "replay", "status": "pass", "duration_ns": 5}]}],
		"start": "2026-12-02T10:00:00Z", "duration_ns": 7}`,
	"sweep": `{"idemtest_version": "dev", "failed": false, "trace": "t.jsonl", "endpoint": "e", "faults": ["lost-response"],
		"calls": [{"seq": 1, "tool": "t", "mutating": true}], "evidence": ["answers"],
		"baseline": {"seq": 0, "fault": "", "status": "pass", "reason": "", "duration_ns": 1}, "cells": [],
		"fresh_per_run": false, "start": "2026-12-02T10:00:00Z", "duration_ns": 7}`,
	"proxy": `{"result": "pass", "calls": 2, "mutating": 1, "faults": 1, "violations": 0,
		"findings": [{"check": "retried", "violation": false, "seq": [1, 2], "tool": "t", "message": "m"}],
		"checked": ["key-present"]}`,
	"tools": `[{"name": "t", "readOnlyHint": false, "idempotentHint": false, "key_carrier": "arg idempotencyKey",
		"accepts_key": "yes", "mutating": true, "natural": false}]`,
	"trace": `{"idemtest_trace": 1, "endpoint": "node s.js", "transport": "mcp-stdio", "started": "2026-12-02T10:00:00Z"}
{"seq": 1, "at_us": 5, "tool": "t", "args": {"a": 1}, "key": "k", "key_carrier": "arg idempotencyKey", "mutating": true, "outcome": "ok", "replayed": false, "duration_us": 3}
`,
}

const metrics = `{"calls": 1, "ok": 1, "fail": 0, "info": 0, "replayed": 0, "conflicts": 0, "keyed": 1, "retries": 0,
	"concurrent_copies": 0, "spread_max_us": 0, "duplicate_executions": 0, "replays_differ": 0}`

func TestValidate(t *testing.T) {
	tests := []struct {
		name, kind string
		old, new   string // good[kind] with old replaced by new
		want       string // in the error; "" for valid
	}{
		{"run valid", "run", "", "", ""},
		{"check valid", "check", "", "", ""},
		{"sweep valid", "sweep", "", "", ""},
		{"proxy valid", "proxy", "", "", ""},
		{"tools valid", "tools", "", "", ""},
		{"trace valid", "trace", "", "", ""},

		{"run newline written as an escape between tokens", "run", "{\"version\": 1,", `{\u000a"version": 1,`, "not JSON"},
		{"run second document", "run", `"summary"`, `"summary"`, ""},
		{"run missing field", "run", `"interrupted": false,`, ``, "interrupted"},
		{"run unknown field", "run", `"tool": "idemtest",`, `"tool": "idemtest", "extra": 1,`, "extra"},
		{"run wrong type", "run", `"duration_us": 12.5`, `"duration_us": "12.5"`, "duration_us"},
		{"run bad outcome", "run", `"outcome": "ok"`, `"outcome": "maybe"`, "outcome"},
		{"run bad timestamp", "run", `"start": "2026-12-02T10:00:00Z"`, `"start": "yesterday"`, "start"},
		{"run null scenarios", "run", `"scenarios": [{`, `"scenarios": null, "x": [{`, "scenarios"},
		{"check bad status", "check", `"status": "pass"`, `"status": "ok"`, "status"},
		{"check missing cells", "check", `, "cells": [{"check": "replay", "status": "pass", "duration_ns": 5}]`, ``, "cells"},
		{"check fractional ns", "check", `"duration_ns": 7`, `"duration_ns": 7.5`, "duration_ns"},
		{"sweep unknown fault", "sweep", `"faults": ["lost-response"]`, `"faults": ["lose"]`, "faults"},
		{"sweep cell extra", "sweep", `"duration_ns": 1}`, `"duration_ns": 1, "scenario": {}}`, "scenario"},
		{"proxy bad result", "proxy", `"result": "pass"`, `"result": "passed"`, "result"},
		{"proxy bad check", "proxy", `"checked": ["key-present"]`, `"checked": ["key"]`, "checked"},
		{"tools bad carrier", "tools", `"key_carrier": "arg idempotencyKey"`, `"key_carrier": "body idempotencyKey"`, "key_carrier"},
		{"tools object not array", "tools", good["tools"], `{"tools": []}`, "array"},
		{"tools wrong type", "tools", `"mutating": true`, `"mutating": "yes"`, "mutating"},
		{"trace call first", "trace", `{"idemtest_trace": 1, "endpoint": "node s.js", "transport": "mcp-stdio", "started": "2026-12-02T10:00:00Z"}` + "\n", ``, "line 1"},
		{"trace bad transport", "trace", `"mcp-stdio"`, `"stdio"`, "line 1"},
		{"trace call without key", "trace", `"key": "k", `, ``, "line 2"},
		{"trace two lines in one", "trace", "}\n{\"seq\"", `} {"seq"`, "line 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := good[tc.kind]
			if tc.old != "" {
				if !strings.Contains(doc, tc.old) {
					t.Fatalf("the good %s document has no %q", tc.kind, tc.old)
				}
				doc = strings.Replace(doc, tc.old, tc.new, 1)
			}
			if tc.name == "run second document" {
				doc += " {}"
				tc.want = "not one JSON document"
			}
			err := schemacheck.Validate(tc.kind, []byte(doc))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("valid document refused: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("broken document accepted:\n%s", doc)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
}

func TestUnknownKind(t *testing.T) {
	err := schemacheck.Validate("junit", []byte(`{}`))
	if err == nil || !strings.Contains(err.Error(), strings.Join(reportschema.Kinds, ", ")) {
		t.Errorf("unknown kind: %v, want the kinds listed", err)
	}
}
