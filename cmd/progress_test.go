package cmd

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/check"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/load"
	"github.com/idemtest/idemtest/internal/sweep"
	"github.com/idemtest/idemtest/internal/testenv"
	"github.com/idemtest/idemtest/internal/trace"
)

// waitFor returns once s says want; a fake battery waits so for the ticker's heartbeat (no
// fixed sleep decides the verdict: only a heartbeat that never comes fails, after a minute).
func waitFor(t *testing.T, s *syncBuffer, want string) {
	t.Helper()
	if !testenv.Until(time.Minute, func() bool { return strings.Contains(s.String(), want) }) {
		t.Errorf("no %q on stderr:\n%s", want, s)
	}
}

// TestPipedProgress: with stderr not a terminal (a CI log), check and sweep print a plain line
// as each cell is decided, and while one is long a heartbeat every interval (here 1ms, through
// IDEMTEST_PROGRESS_EVERY) saying how long, how many cells are done, and the last one.
func TestPipedProgress(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		seams func(*testing.T, *Seams, *syncBuffer)
		want  string // a regexp over stderr
	}{
		{
			name: "check",
			args: []string{"check", "--endpoint", "refunds"},
			seams: func(t *testing.T, s *Seams, errOut *syncBuffer) {
				s.LoadConfig = func(context.Context, string, load.Options) (*scenario.Scenario, error) { return refundsConfig(), nil }
				s.RunCheck = func(_ context.Context, _ *scenario.Scenario, o check.Options) (*check.Report, error) {
					rep := fakeReport("refunds", map[string][]matrix.Status{"issue_refund": {matrix.Pass, matrix.Fail}})
					rep.Rows[0].Cells[0].Duration = 1500 * time.Millisecond
					for _, c := range rep.Rows[0].Cells {
						o.OnCell("issue_refund", c)
					}
					waitFor(t, errOut, "the last issue_refund replay\n")
					return rep, nil
				}
			},
			want: `\Aissue_refund concurrent ✓ 1\.5s\nissue_refund replay ✗ 0\.0s\n(idemtest: check running \d+s: 2 checks done, the last issue_refund replay\n)+`,
		},
		{
			name: "sweep",
			args: []string{"sweep", "session.jsonl", "--endpoint", "refunds"},
			seams: func(t *testing.T, s *Seams, errOut *syncBuffer) {
				s.LoadConfig = func(context.Context, string, load.Options) (*scenario.Scenario, error) { return refundsConfig(), nil }
				s.ReadTrace = func(context.Context, string) (trace.Header, []trace.Call, error) {
					return trace.Header{}, []trace.Call{{Seq: 1, Tool: "issue_refund", Mutating: true}}, nil
				}
				s.RunSweep = func(_ context.Context, _ *scenario.Scenario, _ string, _ []trace.Call, o sweep.Options) (*sweep.Report, error) {
					o.OnPlan(4, 1)
					cells := []*sweep.Cell{
						{Seq: 0, Status: matrix.Pass, Duration: 200 * time.Millisecond},
						{Seq: 1, Tool: "issue_refund", Fault: "duplicate", Status: matrix.Fail, Duration: 2 * time.Second},
					}
					for _, c := range cells {
						o.OnCell(c)
					}
					waitFor(t, errOut, "the last call 1 issue_refund duplicate\n")
					return &sweep.Report{Endpoint: "refunds", Cells: cells}, nil
				}
			},
			want: `\Asweep: 4 runs \(run 0, then 3 faults for each of 1 mutating calls\)\nrun 0 \(no fault\) ✓ 0\.2s\ncall 1 issue_refund duplicate ✗ 2\.0s\n(idemtest: sweep running \d+s: 2/4 runs done, the last call 1 issue_refund duplicate\n)+`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			io, _, _ := iostreams.Test()
			errOut := &syncBuffer{}
			io.ErrOut = errOut
			io.Getenv = func(k string) string {
				if k == "IDEMTEST_PROGRESS_EVERY" {
					return "1ms"
				}
				return ""
			}
			seams := forbidden(t)
			tc.seams(t, &seams, errOut)
			Execute(context.Background(), &Factory{IO: io, Version: "test", Seams: seams}, tc.args)
			if !regexp.MustCompile(tc.want).MatchString(errOut.String()) {
				t.Errorf("stderr:\n%s\nwant it to match\n%s", errOut, tc.want)
			}
		})
	}
}
