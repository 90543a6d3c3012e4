package baseline

import (
	"strings"
	"testing"
)

// runJSON is a run report with one scenario per (name, status, failure JSON or "").
func runJSON(scenarios ...[3]string) string {
	var parts []string
	for _, s := range scenarios {
		f := ""
		if s[2] != "" {
			f = `, "failure": ` + s[2]
		}
		parts = append(parts, `{"name": "`+s[0]+`", "file": "s.yaml", "status": "`+s[1]+`", "metrics": {"duplicate_executions": 0}`+f+`}`)
	}
	return `{"version": 1, "tool": "idemtest", "report": "run", "scenarios": [` + strings.Join(parts, ",") + `]}`
}

const burstDouble = `{"kind": "verdict", "step": "burst", "pos": {"file": "s.yaml", "line": 9, "col": 5}, "violation": "double-execution", "tool": "issue_refund", "message": "key k-1 executed 2 times"}`

func TestClassify(t *testing.T) {
	tests := []struct {
		name              string
		base, now         string
		kind              Kind
		failOn            string
		new, known, fixed int
		failed            bool
	}{
		{
			name: "known failure does not fail",
			base: runJSON([3]string{"a", "failed", burstDouble}),
			now:  runJSON([3]string{"a", "failed", strings.Replace(burstDouble, "k-1", "k-other", 1)}),
			kind: Run, failOn: FailOnNew, known: 1,
		},
		{
			name: "known failure fails with any",
			base: runJSON([3]string{"a", "failed", burstDouble}),
			now:  runJSON([3]string{"a", "failed", burstDouble}),
			kind: Run, failOn: FailOnAny, known: 1, failed: true,
		},
		{
			name: "line moved is still known",
			base: runJSON([3]string{"a", "failed", burstDouble}),
			now:  runJSON([3]string{"a", "failed", strings.Replace(burstDouble, `"line": 9`, `"line": 30`, 1)}),
			kind: Run, failOn: FailOnNew, known: 1,
		},
		{
			name: "another violation kind is new",
			base: runJSON([3]string{"a", "failed", burstDouble}),
			now:  runJSON([3]string{"a", "failed", strings.Replace(burstDouble, "double-execution", "replay-differs", 1)}),
			kind: Run, failOn: FailOnNew, new: 1, fixed: 1, failed: true,
		},
		{
			name: "another assertion is new",
			base: runJSON([3]string{"a", "failed", `{"kind": "assert", "step": "step3", "expression": "x == 1"}`}),
			now:  runJSON([3]string{"a", "failed", `{"kind": "assert", "step": "step3", "expression": "x == 2"}`}),
			kind: Run, failOn: FailOnNew, new: 1, fixed: 1, failed: true,
		},
		{
			name: "a new scenario failing is new",
			base: runJSON([3]string{"a", "failed", burstDouble}),
			now:  runJSON([3]string{"a", "failed", burstDouble}, [3]string{"b", "errored", `{"kind": "error", "step": "s1"}`}),
			kind: Run, failOn: FailOnNew, new: 1, known: 1, failed: true,
		},
		{
			name: "a passing scenario is fixed",
			base: runJSON([3]string{"a", "failed", burstDouble}),
			now:  runJSON([3]string{"a", "passed", ""}),
			kind: Run, failOn: FailOnNew, fixed: 1,
		},
		{
			name: "a scenario not run is not fixed",
			base: runJSON([3]string{"a", "failed", burstDouble}),
			now:  runJSON([3]string{"b", "passed", ""}, [3]string{"a", "skipped", ""}),
			kind: Run, failOn: FailOnNew,
		},
		{
			name: "check cell known, another new, one fixed",
			base: `{"report": "check", "version": 1, "checks": [], "tools": [{"tool": "t", "cells": [{"check": "concurrent", "status": "fail"}, {"check": "replay", "status": "fail"}]}]}`,
			now:  `{"report": "check", "version": 1, "checks": [], "tools": [{"tool": "t", "cells": [{"check": "concurrent", "status": "fail"}, {"check": "replay", "status": "pass"}, {"check": "missing-key", "status": "fail"}]}]}`,
			kind: Check, failOn: FailOnNew, new: 1, known: 1, fixed: 1, failed: true,
		},
		{
			name: "sweep cell known",
			base: `{"report": "sweep", "version": 1, "trace": "t.jsonl", "baseline": {"seq": 0, "status": "pass"}, "cells": [{"seq": 2, "tool": "t", "fault": "concurrent", "status": "fail"}]}`,
			now:  `{"report": "sweep", "version": 1, "trace": "t.jsonl", "baseline": {"seq": 0, "status": "pass"}, "cells": [{"seq": 2, "tool": "t", "fault": "concurrent", "status": "fail"}]}`,
			kind: Sweep, failOn: FailOnNew, known: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, err := Parse([]byte(tt.base), "base.json", tt.kind)
			if err != nil {
				t.Fatal(err)
			}
			now, err := Parse([]byte(tt.now), "now.json", tt.kind)
			if err != nil {
				t.Fatal(err)
			}
			res := Classify(base, now, tt.failOn)
			if len(res.New) != tt.new || len(res.Known) != tt.known || len(res.Fixed) != tt.fixed {
				t.Errorf("new %v known %v fixed %v, want %d %d %d", res.New, res.Known, res.Fixed, tt.new, tt.known, tt.fixed)
			}
			if res.Failed() != tt.failed {
				t.Errorf("Failed() = %v, want %v", res.Failed(), tt.failed)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name, in string
		kind     Kind
		want     string
	}{
		{"check report for run", `{"report": "check", "version": 1, "checks": [], "tools": []}`, Run, "the report of idemtest check, not of idemtest run"},
		{"run report for sweep", `{"version": 1, "tool": "idemtest", "scenarios": []}`, Sweep, "the report of idemtest run, not of idemtest sweep"},
		{"unknown version", `{"version": 2, "tool": "idemtest", "report": "run", "scenarios": []}`, Run, "format version 2"},
		{"no version", `{"tool": "idemtest", "scenarios": []}`, Run, "format version 0"},
		{"not a report", `{"hello": 1}`, Run, "not a JSON report of idemtest"},
		{"syntax error has a position", "{\"version\": 1,\n  \"scenarios\": [}", Run, "base.json:2:17:"},
		{"wrong type has a position", `{"version": 1, "tool": "idemtest", "report": "run", "scenarios": [{"name": 3}]}`, Run, "base.json:1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), "base.json", tt.kind)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

func TestLine(t *testing.T) {
	r := &Result{New: []Failure{{"a", "x"}}, Known: []Failure{{"b", "y"}, {"c", "z"}}, Fixed: []Failure{{"d", "w"}}}
	want := "Baseline: 1 new, 2 known, 1 fixed — update the baseline with --update-baseline"
	if got := r.Line(); got != want {
		t.Errorf("Line() = %q, want %q", got, want)
	}
	if got := (&Result{Known: []Failure{{"b", "y"}}}).Line(); got != "Baseline: 0 new, 1 known, 0 fixed" {
		t.Errorf("Line() = %q", got)
	}
}
