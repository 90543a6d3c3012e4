package cmd

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/idemtest/idemtest/internal/check"
	"github.com/idemtest/idemtest/internal/merge"
	"github.com/idemtest/idemtest/internal/proxy"
	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/load"
	"github.com/idemtest/idemtest/internal/sweep"
	"github.com/idemtest/idemtest/internal/toolset"
	"github.com/idemtest/idemtest/internal/trace"
)

// Seams are what the commands read their inputs with and run with, as the GitHub CLI's
// Factory hands its commands their HTTP client: each command copies the ones it needs into its
// options, so that its action can be tested from argv with fakes, and testscript is left with
// what only the real binary proves. A nil field is the real implementation.
type Seams struct {
	// Now is the clock (the start of a report of a run that never started).
	Now func() time.Time
	// LoadScenarios loads scenario files and directories with their configs (load.Scenarios).
	LoadScenarios func(ctx context.Context, paths []string, opts load.Options) ([]*scenario.Scenario, error)
	// LoadConfig loads the config found from dir, or opts.Config (load.Config).
	LoadConfig func(ctx context.Context, dir string, opts load.Options) (*scenario.Scenario, error)
	// AdHocEndpoint builds the endpoint the command line describes
	// (scenario.AdHocScenario).
	AdHocEndpoint func(ctx context.Context, a scenario.AdHoc) (*scenario.Scenario, error)
	// RunScenarios runs scenarios and reports what finished (runner.Run).
	RunScenarios func(ctx context.Context, list []*scenario.Scenario, opts runner.Options) *result.Report
	// ListTools lists an endpoint's tools with what idemtest makes of each (runner.Tools).
	ListTools func(ctx context.Context, sc *scenario.Scenario, endpoint string) ([]toolset.ToolInfo, error)
	// RunCheck runs the conformance battery (check.Run).
	RunCheck func(ctx context.Context, base *scenario.Scenario, opts check.Options) (*check.Report, error)
	// ReadTrace reads a trace file (trace.ReadFile).
	ReadTrace func(ctx context.Context, path string) (trace.Header, []trace.Call, error)
	// RunSweep replays a trace with a fault on each mutating call (sweep.Run).
	RunSweep func(ctx context.Context, base *scenario.Scenario, tracePath string, calls []trace.Call, opts sweep.Options) (*sweep.Report, error)
	// ReadReport reads a JSON report to merge (merge.ReadFile).
	ReadReport func(path string) (*merge.Input, error)
	// RunProxy forwards an agent's session to its tool server and returns what the verdict needs of its calls
	// ((*proxy.Session).Run).
	RunProxy func(ctx context.Context, s *proxy.Session) (*agentverdict.Calls, *proxy.UpstreamError, error)
	// RandomSeed draws the seed of proxy --fault-rate when --seed is not given.
	RandomSeed func() uint64
}

// seams returns f's seams with the real implementation in every field a test left nil.
func (f *Factory) seams() Seams {
	s := f.Seams
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.LoadScenarios == nil {
		s.LoadScenarios = load.Scenarios
	}
	if s.LoadConfig == nil {
		s.LoadConfig = load.Config
	}
	if s.AdHocEndpoint == nil {
		s.AdHocEndpoint = scenario.AdHocScenario
	}
	if s.RunScenarios == nil {
		s.RunScenarios = runner.Run
	}
	if s.ListTools == nil {
		s.ListTools = runner.Tools
	}
	if s.RunCheck == nil {
		s.RunCheck = check.Run
	}
	if s.ReadTrace == nil {
		s.ReadTrace = trace.ReadFile
	}
	if s.RunSweep == nil {
		s.RunSweep = sweep.Run
	}
	if s.ReadReport == nil {
		s.ReadReport = merge.ReadFile
	}
	if s.RunProxy == nil {
		s.RunProxy = func(ctx context.Context, sess *proxy.Session) (*agentverdict.Calls, *proxy.UpstreamError, error) {
			return sess.Run(ctx)
		}
	}
	if s.RandomSeed == nil {
		s.RandomSeed = rand.Uint64
	}
	return s
}

// endpointOptions are the EndpointOptions of a command, with the loaders that resolve them.
func (f *Factory) endpointOptions() EndpointOptions {
	s := f.seams()
	return EndpointOptions{LoadConfig: s.LoadConfig, AdHocEndpoint: s.AdHocEndpoint}
}
