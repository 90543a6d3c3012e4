package cmd

import (
	"context"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/load"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// twoScenarios are what the fake loader of run and validate loads.
func twoScenarios() []*scenario.Scenario {
	return []*scenario.Scenario{
		{Name: "refund once", File: "refund.yaml", Pos: scenario.Pos{File: "refund.yaml", Line: 1, Col: 1}, Tags: []string{"refund"}, Trials: 1},
		{Name: "booking burst", File: "booking.yaml", Pos: scenario.Pos{File: "booking.yaml", Line: 1, Col: 1}, Tags: []string{"booking"}, Trials: 1},
	}
}

// outcome is a fake run: each scenario ends with status.
func outcome(status result.Status) func([]*scenario.Scenario) *result.Report {
	return func(list []*scenario.Scenario) *result.Report {
		rep := &result.Report{Start: fakeNow}
		for _, sc := range list {
			r := &result.ScenarioResult{Scenario: sc, Status: status, Trials: 1, TrialsRun: 1, Start: fakeNow}
			switch status {
			case result.Passed:
				r.TrialsPassed = 1
			case result.Failed:
				r.TrialsFailed = 1
				r.Failure = &result.Failure{Kind: result.FailAssert, Step: "s1", Pos: scenario.Pos{File: sc.File, Line: 4, Col: 7}, Message: "executed twice"}
			case result.Interrupted:
				r.TrialsRun = 0
				rep.Interrupted = true
			}
			rep.Scenarios = append(rep.Scenarios, r)
		}
		return rep
	}
}

// loadErrors is what a loader returns for a scenario with a typo: positioned problems.
var loadErrors = yamlfile.Errors{{Pos: scenario.Pos{File: "refund.yaml", Line: 3, Col: 5}, Msg: `unknown key "asert"`, Source: "    asert: ok"}}

// TestRunOptions: idemtest run from argv to the loader, the runner, the reports and the exit
// code, with the loader and the runner faked.
func TestRunOptions(t *testing.T) {
	type seen struct {
		paths []string
		load  load.Options
		list  []string
		run   runner.Options
	}
	tests := []struct {
		name string
		args []string
		// loadErr is the loader's error; cancel cancels the run while loading (Ctrl-C).
		loadErr error
		cancel  bool
		// status is how every scenario the runner gets ends ("": the runner must not run).
		status result.Status
		runErr error
		code   ExitCode
		stderr string
		check  func(t *testing.T, s seen, r ran, dir string)
	}{
		{
			name: "flags reach the loader and the runner", status: result.Passed, code: ExitOK,
			args: []string{"run", "-j", "3", "--trials", "7", "--session", "s1", "--fail-fast", "--config", "c.yaml", "--allow-host", "api.example.com", "--coverage", "d1", "d2"},
			check: func(t *testing.T, s seen, _ ran, _ string) {
				if !slices.Equal(s.paths, []string{"d1", "d2"}) || s.load.Config != "c.yaml" || !slices.Equal(s.load.AllowHosts, []string{"api.example.com"}) {
					t.Errorf("loader got %q, %+v", s.paths, s.load)
				}
				o := s.run
				if o.Parallel != 3 || o.Trials != 7 || o.Session != "s1" || !o.FailFast || !o.Coverage || o.OnEvent == nil {
					t.Errorf("runner got %+v", o)
				}
			},
		},
		{
			name: "no path is the current directory", status: result.Passed, code: ExitOK, args: []string{"run"},
			check: func(t *testing.T, s seen, _ ran, _ string) {
				if !slices.Equal(s.paths, []string{"."}) || s.run.Parallel != 1 || s.run.Trials != 0 {
					t.Errorf("loader got %q, runner %+v", s.paths, s.run)
				}
			},
		},
		{
			name: "--tag and --run pick the scenarios the runner gets", status: result.Passed, code: ExitOK,
			args: []string{"run", "--tag", "booking,other", "--run", "burst$", "."},
			check: func(t *testing.T, s seen, _ ran, _ string) {
				if !slices.Equal(s.list, []string{"booking burst"}) {
					t.Errorf("runner got %q", s.list)
				}
			},
		},
		{
			name: "--shard deals the scenarios", status: result.Passed, code: ExitOK, args: []string{"run", "--shard", "2/2", "."},
			check: func(t *testing.T, s seen, _ ran, _ string) {
				if len(s.list) != 1 {
					t.Errorf("shard 2/2 of 2 scenarios ran %q", s.list)
				}
			},
		},
		{
			name: "a pass writes --json and --junit where asked", status: result.Passed, code: ExitOK,
			args: []string{"run", "--json", "{dir}/r.json", "--junit", "{dir}/r.xml", "."},
			check: func(t *testing.T, _ seen, _ ran, dir string) {
				rep := readReport[jsonreport.JSONReport](t, "run", filepath.Join(dir, "r.json"))
				if rep.Summary.Passed != 2 || rep.Summary.Failed != 0 || rep.Interrupted {
					t.Errorf("summary %+v", rep.Summary)
				}
				var suites struct {
					Tests    int `xml:"tests,attr"`
					Failures int `xml:"failures,attr"`
				}
				b, err := os.ReadFile(filepath.Join(dir, "r.xml"))
				if err != nil {
					t.Fatal(err)
				}
				if err := xml.Unmarshal(b, &suites); err != nil || suites.Tests != 2 || suites.Failures != 0 {
					t.Errorf("junit %+v (%v):\n%s", suites, err, b)
				}
			},
		},
		{
			name: "a failure exits 1 and the JSON on stdout says so", status: result.Failed, code: ExitFailed,
			args: []string{"run", "--json", "-", "."},
			check: func(t *testing.T, _ seen, r ran, _ string) {
				rep := decodeReport[jsonreport.JSONReport](t, "run", []byte(r.out))
				if rep.Summary.Failed != 2 || rep.Scenarios[0].Failure == nil || rep.Scenarios[0].Failure.Pos.Line != 4 {
					t.Errorf("report %+v", rep)
				}
			},
		},
		{
			name: "a service that did not start exits 1", status: result.Passed, runErr: errors.New("service db did not start"), code: ExitFailed,
			args: []string{"run", "--json", "-", "."},
			check: func(t *testing.T, _ seen, r ran, _ string) {
				rep := decodeReport[jsonreport.JSONReport](t, "run", []byte(r.out))
				if rep.Error != "service db did not start" || rep.Summary.Errored != 1 {
					t.Errorf("report error %q, summary %+v", rep.Error, rep.Summary)
				}
			},
		},
		{
			name: "interrupted while running exits 130 with the report", status: result.Interrupted, code: ExitInterrupted,
			args: []string{"run", "--json", "{dir}/r.json", "."},
			check: func(t *testing.T, _ seen, _ ran, dir string) {
				if rep := readReport[jsonreport.JSONReport](t, "run", filepath.Join(dir, "r.json")); !rep.Interrupted || rep.Summary.Interrupted != 2 {
					t.Errorf("report interrupted %v, summary %+v", rep.Interrupted, rep.Summary)
				}
			},
		},
		{
			name: "interrupted while loading exits 130 with an empty report", cancel: true, loadErr: context.Canceled, code: ExitInterrupted,
			args: []string{"run", "--json", "{dir}/r.json", "."},
			check: func(t *testing.T, _ seen, _ ran, dir string) {
				rep := readReport[jsonreport.JSONReport](t, "run", filepath.Join(dir, "r.json"))
				if !rep.Interrupted || len(rep.Scenarios) != 0 || !rep.Start.Equal(fakeNow) {
					t.Errorf("report %+v, want interrupted, empty, started at the clock's time", rep)
				}
			},
		},
		{
			name: "a load error is exit 2 at file:line:col, nothing run", loadErr: loadErrors, code: ExitUsage,
			args: []string{"run", "--json", "{dir}/r.json", "."}, stderr: "refund.yaml:3:5: unknown key \"asert\"",
			check: func(t *testing.T, _ seen, r ran, dir string) {
				if _, err := os.Stat(filepath.Join(dir, "r.json")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a report was written: %v", err)
				}
				wantLine(t, r.errOut, "idemtest: 1 problem found; nothing was sent")
			},
		},
		{name: "a report path that is a directory is exit 2, nothing run", args: []string{"run", "--json", "{dir}", "."}, code: ExitUsage, stderr: ": is a directory"},
		{name: "--parallel 0", args: []string{"run", "-j", "0", "."}, code: ExitUsage, stderr: "--parallel must be at least 1"},
		{name: "--trials over the limit", args: []string{"run", "--trials", "100001", "."}, code: ExitUsage, stderr: "--trials must be from 1 to"},
		{name: "--run not a regex", args: []string{"run", "--run", "(", "."}, code: ExitUsage, stderr: "--run: error parsing regexp"},
		{name: "--fail-on without --baseline", args: []string{"run", "--fail-on", "new", "."}, code: ExitUsage, stderr: "--fail-on new needs --baseline FILE"},
		{name: "--shard not K/N", args: []string{"run", "--shard", "3", "."}, code: ExitUsage, stderr: "--shard: "},
		{name: "--tag matching nothing", args: []string{"run", "--tag", "nope", "."}, code: ExitUsage, stderr: "no scenario matches --tag/--run"},
		{name: "--trace to stdout", args: []string{"run", "--trace", "-", "."}, code: ExitUsage, stderr: "--trace needs a file"},
		{name: "--json without a file", args: []string{"run", "--json"}, code: ExitUsage, stderr: "--json takes a FILE, or - for standard output"},
		{name: "an unknown flag", args: []string{"run", "--paralel", "2"}, code: ExitUsage, stderr: "unknown flag: --paralel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var s seen
			loads, runs := &calls[int]{}, &calls[int]{}
			seams := forbidden(t)
			seams.LoadScenarios = func(_ context.Context, paths []string, o load.Options) ([]*scenario.Scenario, error) {
				loads.add(1)
				s.paths, s.load = paths, o
				if tc.cancel {
					cancel()
				}
				if tc.loadErr != nil {
					return nil, tc.loadErr
				}
				return twoScenarios(), nil
			}
			seams.RunScenarios = func(_ context.Context, list []*scenario.Scenario, o runner.Options) *result.Report {
				runs.add(1)
				s.run = o
				for _, sc := range list {
					s.list = append(s.list, sc.Name)
				}
				if tc.status == "" {
					t.Error("the runner ran")
					return &result.Report{}
				}
				rep := outcome(tc.status)(list)
				rep.Err = tc.runErr
				return rep
			}
			r := execute(ctx, seams, withDir(tc.args, dir)...)
			r.wantExit(t, tc.code, tc.stderr)
			if tc.status != "" && len(runs.got) != 1 {
				t.Errorf("the runner ran %d times, want once", len(runs.got))
			}
			if tc.check != nil {
				tc.check(t, s, r, dir)
			}
		})
	}
}

// withDir puts dir where an argument says {dir}.
func withDir(args []string, dir string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "{dir}", dir)
	}
	return out
}

// wantLine fails the test when text has no line equal to line.
func wantLine(t *testing.T, text, line string) {
	t.Helper()
	if !slices.Contains(strings.Split(text, "\n"), line) {
		t.Errorf("no line %q in:\n%s", line, text)
	}
}
