package cmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/load"
	"github.com/idemtest/idemtest/internal/sweep"
	"github.com/idemtest/idemtest/internal/trace"
)

// recorded is the trace the fake reader reads: one mutating call, recorded against a stdio MCP
// server.
var recorded = struct {
	h     trace.Header
	calls []trace.Call
}{
	trace.Header{Version: 1, Endpoint: "node server.js", Transport: "mcp-stdio", Started: fakeNow},
	[]trace.Call{{Seq: 1, Tool: "issue_refund", Key: "k1", KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: "ok"}},
}

// sweepReport is a fake sweep: run 0 and the three faults of call 1, the lost response with
// status lost.
func sweepReport(endpoint string, lost matrix.Status) *sweep.Report {
	rep := &sweep.Report{
		Trace: "session.jsonl", Endpoint: endpoint, Faults: sweep.Faults, Evidence: []string{"verdict"},
		Calls:    []sweep.CallInfo{{Seq: 1, Tool: "issue_refund", Mutating: true}},
		Baseline: &sweep.Cell{Seq: 0, Fault: "none", Status: matrix.Pass, Reason: "run 0"},
		Start:    fakeNow, Duration: time.Second,
	}
	for _, f := range sweep.Faults {
		c := &sweep.Cell{Seq: 1, Tool: "issue_refund", Fault: f, Status: matrix.Pass, Reason: "same as run 0"}
		if f == sweep.LostResponse {
			c.Status = lost
		}
		rep.Cells = append(rep.Cells, c)
	}
	return rep
}

// sweepJSON is what a consumer reads of sweep --json.
type sweepJSON struct {
	Failed      bool   `json:"failed"`
	Trace       string `json:"trace"`
	Interrupted bool   `json:"interrupted"`
	Cells       []struct {
		Seq    int    `json:"seq"`
		Fault  string `json:"fault"`
		Status string `json:"status"`
	} `json:"cells"`
}

// TestSweepOptions: idemtest sweep from argv to the trace it reads, the server it sweeps, the
// sweep's options, the reports and the exit code, with the reader and the sweep faked.
func TestSweepOptions(t *testing.T) {
	type seen struct {
		path   string
		adhoc  []scenario.AdHoc
		opts   sweep.Options
		traced string
		calls  []trace.Call
	}
	tests := []struct {
		name    string
		args    []string
		readErr error
		// report and err are the sweep's outcome (report nil: the sweep must not run).
		report func() *sweep.Report
		err    error
		cancel bool
		code   ExitCode
		stderr string
		check  func(t *testing.T, s seen, r ran, dir string)
	}{
		{
			name: "flags reach the sweep", code: ExitOK,
			report: func() *sweep.Report { return sweepReport(scenario.AdHocName, matrix.Pass) },
			args:   []string{"sweep", "session.jsonl", "--mcp-command", "node other.js --stdio", "--fresh-per-run", "--max-runs", "9"},
			check: func(t *testing.T, s seen, _ ran, _ string) {
				if s.path != "session.jsonl" || s.traced != "session.jsonl" || len(s.calls) != 1 {
					t.Errorf("read %q, swept %q with %d calls", s.path, s.traced, len(s.calls))
				}
				if len(s.adhoc) != 1 || !slices.Equal(s.adhoc[0].MCPCommand, []string{"node", "other.js", "--stdio"}) {
					t.Errorf("ad hoc %+v", s.adhoc)
				}
				if s.opts.Endpoint != scenario.AdHocName || !s.opts.FreshPerRun || s.opts.MaxRuns != 9 || s.opts.OnPlan == nil || s.opts.OnCell == nil {
					t.Errorf("sweep got %+v", s.opts)
				}
			},
		},
		{
			name: "--endpoint sweeps the config's endpoint", code: ExitOK,
			report: func() *sweep.Report { return sweepReport("refunds", matrix.Pass) },
			args:   []string{"sweep", "session.jsonl", "--endpoint", "refunds"},
			check: func(t *testing.T, s seen, _ ran, _ string) {
				if len(s.adhoc) != 0 || s.opts.Endpoint != "refunds" || s.opts.MaxRuns != defaultMaxRuns || s.opts.FreshPerRun {
					t.Errorf("ad hoc %+v, sweep %+v", s.adhoc, s.opts)
				}
			},
		},
		{
			name: "--use-trace-endpoint runs the trace's server, said first", code: ExitOK,
			report: func() *sweep.Report { return sweepReport(scenario.AdHocName, matrix.Pass) },
			args:   []string{"sweep", "session.jsonl", "--use-trace-endpoint"},
			stderr: "sweep: running the server the trace names (--use-trace-endpoint): --mcp-command 'node server.js'",
			check: func(t *testing.T, s seen, _ ran, _ string) {
				if len(s.adhoc) != 1 || !slices.Equal(s.adhoc[0].MCPCommand, []string{"node", "server.js"}) {
					t.Errorf("ad hoc %+v", s.adhoc)
				}
			},
		},
		{
			name: "a divergent run exits 1 and the JSON on stdout says so", code: ExitFailed,
			report: func() *sweep.Report { return sweepReport("refunds", matrix.Fail) },
			args:   []string{"sweep", "session.jsonl", "--endpoint", "refunds", "--json", "-", "--junit", "{dir}/s.xml"},
			check: func(t *testing.T, _ seen, r ran, dir string) {
				rep := decodeReport[sweepJSON](t, "sweep", []byte(r.out))
				if !rep.Failed || len(rep.Cells) != 3 || rep.Cells[0].Fault != sweep.LostResponse || rep.Cells[0].Status != "fail" {
					t.Errorf("report %+v", rep)
				}
				if _, err := os.Stat(filepath.Join(dir, "s.xml")); err != nil {
					t.Error(err)
				}
			},
		},
		{
			name: "interrupted exits 130 with the report", code: ExitInterrupted, cancel: true,
			report: func() *sweep.Report {
				rep := sweepReport("refunds", matrix.Pass)
				rep.Interrupted = true
				return rep
			},
			args: []string{"sweep", "session.jsonl", "--endpoint", "refunds", "--json", "{dir}/s.json"},
			check: func(t *testing.T, _ seen, _ ran, dir string) {
				if rep := readReport[sweepJSON](t, "sweep", filepath.Join(dir, "s.json")); !rep.Interrupted {
					t.Errorf("report %+v, want interrupted", rep)
				}
			},
		},
		{
			name: "a trace that does not parse is exit 2 at file:line:col", code: ExitUsage,
			readErr: &trace.PosError{Line: 3, Col: 9, Msg: "invalid character"}, stderr: "session.jsonl:3:9: invalid character",
			args: []string{"sweep", "session.jsonl", "--endpoint", "refunds"},
		},
		{
			name: "a trace that cannot be read is exit 2", code: ExitUsage, readErr: os.ErrNotExist,
			stderr: "session.jsonl: file does not exist", args: []string{"sweep", "session.jsonl", "--endpoint", "refunds"},
		},
		{
			name: "a trace that cannot be replayed is exit 2", code: ExitUsage, err: &sweep.TraceError{Msg: "no calls"},
			report: func() *sweep.Report { return nil }, stderr: "session.jsonl: no calls",
			args: []string{"sweep", "session.jsonl", "--endpoint", "refunds"},
		},
		{
			name: "more runs than --max-runs is exit 2 naming the flag", code: ExitUsage, err: &sweep.LimitError{Runs: 601, Mutating: 200, Max: 500},
			report: func() *sweep.Report { return nil }, stderr: "pass --max-runs 601 to make them",
			args: []string{"sweep", "session.jsonl", "--endpoint", "refunds"},
		},
		{
			name: "a sweep that could not start exits 1", code: ExitFailed, err: errors.New("server exited"),
			report: func() *sweep.Report { return nil }, stderr: "idemtest: server exited",
			args: []string{"sweep", "session.jsonl", "--endpoint", "refunds"},
		},
		{name: "no server named", args: []string{"sweep", "session.jsonl"}, code: ExitUsage, stderr: "no server to sweep named: this trace was recorded against `node server.js`"},
		{name: "--use-trace-endpoint and --endpoint", args: []string{"sweep", "session.jsonl", "--endpoint", "refunds", "--use-trace-endpoint"}, code: ExitUsage, stderr: "--use-trace-endpoint and an endpoint flag both name the server"},
		{name: "--max-runs 0", args: []string{"sweep", "session.jsonl", "--endpoint", "refunds", "--max-runs", "0"}, code: ExitUsage, stderr: "--max-runs 0: want at least 1"},
		{name: "no trace", args: []string{"sweep", "--endpoint", "refunds"}, code: ExitUsage, stderr: "accepts 1 arg(s), received 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var s seen
			sweeps := &calls[int]{}
			seams := forbidden(t)
			seams.ReadTrace = func(_ context.Context, path string) (trace.Header, []trace.Call, error) {
				s.path = path
				return recorded.h, recorded.calls, tc.readErr
			}
			seams.LoadConfig = func(context.Context, string, load.Options) (*scenario.Scenario, error) { return refundsConfig(), nil }
			seams.AdHocEndpoint = func(_ context.Context, a scenario.AdHoc) (*scenario.Scenario, error) {
				s.adhoc = append(s.adhoc, a)
				return &scenario.Scenario{Endpoints: map[string]*scenario.Endpoint{scenario.AdHocName: {}}}, nil
			}
			seams.RunSweep = func(_ context.Context, _ *scenario.Scenario, path string, calls []trace.Call, o sweep.Options) (*sweep.Report, error) {
				sweeps.add(1)
				s.traced, s.calls, s.opts = path, calls, o
				if tc.report == nil {
					t.Error("the sweep ran")
					return nil, nil
				}
				if tc.cancel {
					cancel()
				}
				return tc.report(), tc.err
			}
			r := execute(ctx, seams, withDir(tc.args, dir)...)
			r.wantExit(t, tc.code, tc.stderr)
			if tc.report != nil && len(sweeps.got) != 1 {
				t.Errorf("the sweep ran %d times, want once", len(sweeps.got))
			}
			if tc.check != nil {
				tc.check(t, s, r, dir)
			}
		})
	}
}
