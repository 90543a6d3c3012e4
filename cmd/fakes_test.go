package cmd

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/check"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/merge"
	"github.com/idemtest/idemtest/internal/proxy"
	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
	"github.com/idemtest/idemtest/internal/reportschema/schemacheck"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/load"
	"github.com/idemtest/idemtest/internal/sweep"
	"github.com/idemtest/idemtest/internal/toolset"
	"github.com/idemtest/idemtest/internal/trace"
)

// fakeNow is the clock of the commands under test.
var fakeNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// forbidden are seams that fail the test when a command calls them: a row sets the ones its
// command may call, so every other load or run, and every request, is caught.
func forbidden(t *testing.T) Seams {
	t.Helper()
	no := func(what string) { t.Helper(); t.Errorf("%s was called", what) }
	return Seams{
		Now: func() time.Time { return fakeNow },
		LoadScenarios: func(context.Context, []string, load.Options) ([]*scenario.Scenario, error) {
			no("LoadScenarios")
			return nil, nil
		},
		LoadConfig: func(context.Context, string, load.Options) (*scenario.Scenario, error) {
			no("LoadConfig")
			return &scenario.Scenario{}, nil
		},
		AdHocEndpoint: func(context.Context, scenario.AdHoc) (*scenario.Scenario, error) {
			no("AdHocEndpoint")
			return &scenario.Scenario{}, nil
		},
		RunScenarios: func(context.Context, []*scenario.Scenario, runner.Options) *result.Report {
			no("RunScenarios")
			return &result.Report{}
		},
		ListTools: func(context.Context, *scenario.Scenario, string) ([]toolset.ToolInfo, error) {
			no("ListTools")
			return nil, nil
		},
		RunCheck: func(context.Context, *scenario.Scenario, check.Options) (*check.Report, error) {
			no("RunCheck")
			return &check.Report{}, nil
		},
		ReadTrace: func(context.Context, string) (trace.Header, []trace.Call, error) {
			no("ReadTrace")
			return trace.Header{}, nil, nil
		},
		RunSweep: func(context.Context, *scenario.Scenario, string, []trace.Call, sweep.Options) (*sweep.Report, error) {
			no("RunSweep")
			return &sweep.Report{}, nil
		},
		ReadReport: func(string) (*merge.Input, error) {
			no("ReadReport")
			return nil, nil
		},
		RunProxy: func(context.Context, *proxy.Session) (*agentverdict.Calls, *proxy.UpstreamError, error) {
			no("RunProxy")
			return nil, nil, nil
		},
		RandomSeed: func() uint64 { return 42 },
	}
}

// ran is what a command line did: its exit code and what it wrote.
type ran struct {
	code        ExitCode
	out, errOut string
}

// execute runs args as idemtest would, with seams and ctx (a fake cancels it to stand for
// Ctrl-C).
func execute(ctx context.Context, s Seams, args ...string) ran {
	io, out, errOut := iostreams.Test()
	code := Execute(ctx, &Factory{IO: io, Version: "test", Seams: s}, args)
	return ran{code, out.String(), errOut.String()}
}

// wantExit fails the test when r did not end with code or does not say want on stderr.
func (r ran) wantExit(t *testing.T, code ExitCode, want string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.out, r.errOut)
	}
	if want != "" && !strings.Contains(r.errOut, want) {
		t.Errorf("stderr does not say %q:\n%s", want, r.errOut)
	}
}

// decodeReport validates data against the schema of kind, as a consumer of the report reads
// it, and decodes it into a T.
func decodeReport[T any](t *testing.T, kind string, data []byte) T {
	t.Helper()
	if err := schemacheck.Validate(kind, data); err != nil {
		t.Fatalf("%s report: %v\n%s", kind, err, data)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s report: %v\n%s", kind, err, data)
	}
	return v
}

// readReport reads the report of kind a command wrote to path, validated and decoded like
// decodeReport.
func readReport[T any](t *testing.T, kind, path string) T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeReport[T](t, kind, b)
}

// calls records what a fake was called with, for the row's check to read after the command.
type calls[T any] struct {
	mu  sync.Mutex
	got []T
}

func (c *calls[T]) add(v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, v)
}

// one is the only call recorded; the test fails when there was not exactly one.
func (c *calls[T]) one(t *testing.T, what string) T {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.got) != 1 {
		t.Fatalf("%s called %d times, want once", what, len(c.got))
	}
	return c.got[0]
}
