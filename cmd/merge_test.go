package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/merge"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
)

// shardReport is the JSON report a shard job wrote, by the real writer: run's with one
// scenario of twoScenarios per shard, or check's with one tool per shard; shard K of 2.
func shardReport(t *testing.T, kind baseline.Kind, shard int, status result.Status) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	switch kind {
	case baseline.Run:
		rep := outcome(status)([]*scenario.Scenario{twoScenarios()[shard-1]})
		rep.Shard = result.Shard{Index: shard, Total: 2}
		err = jsonreport.Write(&buf, rep, "test")
	case baseline.Check:
		cell := matrix.Pass
		if status == result.Failed {
			cell = matrix.Fail
		}
		rep := fakeReport("refunds", map[string][]matrix.Status{fmt.Sprintf("tool_%d", shard): {cell, matrix.Pass}})
		rep.Shard = result.Shard{Index: shard, Total: 2}
		err = jsonreport.WriteCheck(&buf, rep, "test")
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// shard is one report the fake reader returns for a path.
type shard struct {
	kind   baseline.Kind
	status result.Status
}

// TestMergeOptions: idemtest report merge from argv to the reports it reads, the merged
// reports it writes and the exit code, with the report reader faked (the reports themselves
// are written by the real JSON writers).
func TestMergeOptions(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		shards map[string]shard
		// readErr fails the read of this path.
		readErr string
		code    ExitCode
		stderr  string
		check   func(t *testing.T, read []string, r ran, dir string)
	}{
		{
			name: "two passing run shards merge into one passing report", code: ExitOK,
			shards: map[string]shard{"s1.json": {baseline.Run, result.Passed}, "s2.json": {baseline.Run, result.Passed}},
			args:   []string{"report", "merge", "s1.json", "s2.json", "--json", "-", "--junit", "{dir}/m.xml"},
			check: func(t *testing.T, read []string, r ran, dir string) {
				if !slices.Equal(read, []string{"s1.json", "s2.json"}) {
					t.Errorf("read %q", read)
				}
				rep := decodeReport[jsonreport.JSONReport](t, "run", []byte(r.out))
				if rep.Summary.Passed != 2 || len(rep.Scenarios) != 2 {
					t.Errorf("summary %+v", rep.Summary)
				}
				if _, err := os.Stat(filepath.Join(dir, "m.xml")); err != nil {
					t.Error(err)
				}
			},
		},
		{
			name: "a failing shard fails the merged report", code: ExitFailed,
			shards: map[string]shard{"s1.json": {baseline.Run, result.Passed}, "s2.json": {baseline.Run, result.Failed}},
			args:   []string{"report", "merge", "s1.json", "s2.json", "--json", "{dir}/m.json"},
			check: func(t *testing.T, _ []string, _ ran, dir string) {
				if rep := readReport[jsonreport.JSONReport](t, "run", filepath.Join(dir, "m.json")); rep.Summary.Passed != 1 || rep.Summary.Failed != 1 {
					t.Errorf("summary %+v", rep.Summary)
				}
			},
		},
		{
			name: "an interrupted shard fails the merged report", code: ExitFailed, stderr: "a merged report was interrupted",
			shards: map[string]shard{"s1.json": {baseline.Run, result.Passed}, "s2.json": {baseline.Run, result.Interrupted}},
			args:   []string{"report", "merge", "s1.json", "s2.json"},
		},
		{
			name: "check shards merge into one matrix", code: ExitOK,
			shards: map[string]shard{"c1.json": {baseline.Check, result.Passed}, "c2.json": {baseline.Check, result.Passed}},
			args:   []string{"report", "merge", "c1.json", "c2.json", "--json", "-"},
			check: func(t *testing.T, _ []string, r ran, _ string) {
				rep := decodeReport[checkJSON](t, "check", []byte(r.out))
				if rep.Failed || len(rep.Tools) != 2 {
					t.Errorf("report %+v", rep)
				}
			},
		},
		{
			name: "a ✗ in a check shard fails the merged matrix", code: ExitFailed,
			shards: map[string]shard{"c1.json": {baseline.Check, result.Failed}, "c2.json": {baseline.Check, result.Passed}},
			args:   []string{"report", "merge", "c1.json", "c2.json"},
		},
		{
			name: "a report that cannot be read is exit 2, nothing written", readErr: "s2.json", code: ExitUsage, stderr: "read report s2.json: permission denied",
			shards: map[string]shard{"s1.json": {baseline.Run, result.Passed}},
			args:   []string{"report", "merge", "s1.json", "s2.json", "--json", "{dir}/m.json"},
			check: func(t *testing.T, _ []string, _ ran, dir string) {
				if _, err := os.Stat(filepath.Join(dir, "m.json")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a report was written: %v", err)
				}
			},
		},
		{
			name: "run and check reports are exit 2", code: ExitUsage, stderr: "merge reports of one command",
			shards: map[string]shard{"s1.json": {baseline.Run, result.Passed}, "c1.json": {baseline.Check, result.Passed}},
			args:   []string{"report", "merge", "s1.json", "c1.json"},
		},
		{
			name: "--html of check reports is exit 2", code: ExitUsage, stderr: "--html: check has no HTML report",
			shards: map[string]shard{"c1.json": {baseline.Check, result.Passed}},
			args:   []string{"report", "merge", "c1.json", "--html", "{dir}/m.html"},
		},
		{name: "no report", args: []string{"report", "merge"}, code: ExitUsage, stderr: "requires at least 1 arg(s)"},
		{name: "an unknown report command", args: []string{"report", "join", "a.json"}, code: ExitUsage, stderr: `unknown command "join" for idemtest report`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var read []string
			seams := forbidden(t)
			seams.ReadReport = func(path string) (*merge.Input, error) {
				read = append(read, path)
				if path == tc.readErr {
					return nil, fmt.Errorf("read report %s: %w", path, os.ErrPermission)
				}
				s, ok := tc.shards[path]
				if !ok {
					t.Fatalf("read %s, which the row does not have", path)
				}
				return &merge.Input{Path: path, Kind: s.kind, Data: shardReport(t, s.kind, len(read), s.status)}, nil
			}
			r := execute(context.Background(), seams, withDir(tc.args, dir)...)
			r.wantExit(t, tc.code, tc.stderr)
			if tc.check != nil {
				tc.check(t, read, r, dir)
			}
		})
	}
}
