package junit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
	"github.com/idemtest/idemtest/internal/reporters/reporterstest"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/sweep"
)

// TestJUnitSchema validates every JUnit report idemtest writes against the schema Jenkins
// checks: runs with passed, failed, errored, skipped and interrupted scenarios, the report of a
// real run against a broken server, a run whose services did not start, check's battery, a
// sweep and the proxy's verdict on an agent whose session failed.
func TestJUnitSchema(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"pass, fail, error, verdict and skipped", func(b *bytes.Buffer) error { return Write(b, reporterstest.SampleReport()) }},
		{"recorded interrupted run", func(b *bytes.Buffer) error { return Write(b, reporterstest.Recorded(t, "run.interrupted.json")) }},
		{"recorded run against the none mode", func(b *bytes.Buffer) error { return Write(b, reporterstest.Recorded(t, "run.none.json")) }},
		{"services did not start", func(b *bytes.Buffer) error {
			return Write(b, &result.Report{Start: reporterstest.T0, Err: errors.New("service refunds exited before it was ready: exit status 1")})
		}},
		{"check battery", func(b *bytes.Buffer) error { return WriteMatrix(b, reporterstest.RecordedCheck(t).Matrix()) }},
		{"sweep", func(b *bytes.Buffer) error {
			rep := &sweep.Report{Trace: "agent.jsonl", Endpoint: "refunds", Start: reporterstest.T0, Duration: 2 * time.Second,
				Faults:   sweep.Faults,
				Calls:    []sweep.CallInfo{{Seq: 1, Tool: "issue_refund", Mutating: true}, {Seq: 2, Tool: "list_refunds"}},
				Baseline: &sweep.Cell{Status: matrix.Pass, Reason: "the trace replayed"},
				Cells: []*sweep.Cell{
					{Seq: 1, Tool: "issue_refund", Fault: sweep.LostResponse, Status: matrix.Fail, Reason: "key k executed 2 times <&>", Details: []string{"\x00 bytes"}},
					{Seq: 1, Tool: "issue_refund", Fault: sweep.Timeout, Status: matrix.Inconclusive, Reason: "no retry"},
				}}
			return WriteMatrix(b, rep.Matrix())
		}},
		{"proxy verdict", func(b *bytes.Buffer) error {
			v, _ := agentverdict.Judge(context.Background(), nil, agentverdict.JudgeOptions{})
			v.Error = "tool server \"sh\" never answered <&>\n\x00 boom"
			return WriteProxy(b, v)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.write(&buf); err != nil {
				t.Fatal(err)
			}
			reporterstest.ValidateJUnit(t, buf.Bytes())
		})
	}
}

// TestJUnitSchemaCatchesInvalidReports shows the validation can fail: the attributes the schema
// does not allow (a testcase's file and line) are refused.
func TestJUnitSchemaCatchesInvalidReports(t *testing.T) {
	if _, err := exec.LookPath("xmllint"); err != nil {
		t.Skip("xmllint is not installed")
	}
	bad := []byte(`<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="idemtest" tests="1" failures="0" errors="0" time="0.001">
  <testsuite name="a.yaml" tests="1" failures="0" errors="0" time="0.001">
    <testcase name="x" classname="a" file="a.yaml" line="3" time="0.001"></testcase>
  </testsuite>
</testsuites>
`)
	xsd, _ := filepath.Abs(filepath.Join("testdata", "junit-10.xsd"))
	path := filepath.Join(t.TempDir(), "bad.xml")
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("xmllint", "--noout", "--schema", xsd, path).CombinedOutput(); err == nil {
		t.Errorf("xmllint accepted a testcase with file and line:\n%s", out)
	}
}

// skippedOf sums the suites' skipped counts (the schema's root has no skipped attribute).
func skippedOf(doc JUnitTestSuites) int {
	n := 0
	for _, s := range doc.Suites {
		n += s.Skipped
	}
	return n
}
