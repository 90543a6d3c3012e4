package scenariogen

import (
	"fmt"
	"time"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/safefile"
	"github.com/idemtest/idemtest/internal/scenario"
)

// Spec is one scenario that check or sweep builds, as it is written: it becomes both the
// in-memory scenario the runner runs and, with --write, the file saved, so what is saved is what
// ran.
type Spec struct {
	Name     string   `yaml:"name"`
	Tags     []string `yaml:"tags,omitempty"`
	Trials   int      `yaml:"trials,omitempty"`
	Endpoint string   `yaml:"endpoint"`
	Steps    []Step   `yaml:"steps"`
	// Tool and Check say which cell the scenario decides; Comment heads the written file.
	Tool    string `yaml:"-"`
	Check   string `yaml:"-"`
	Comment string `yaml:"-"`
	// By names the command that wrote the file in its first line ("idemtest check" when "").
	By string `yaml:"-"`
}

// Step is one step, with the scenario format's field names.
type Step struct {
	ID           string         `yaml:"id,omitempty"`
	CallTool     string         `yaml:"call_tool,omitempty"`
	Args         map[string]any `yaml:"args,omitempty"`
	Key          string         `yaml:"key,omitempty"`
	RetryOf      string         `yaml:"retry_of,omitempty"`
	Fanout       int            `yaml:"fanout,omitempty"`
	LoseResponse bool           `yaml:"lose_response,omitempty"`
	WithoutKey   bool           `yaml:"without_key,omitempty"`
	Expect       string         `yaml:"expect,omitempty"`
	// Verdict "off" leaves the step's calls out of the exactly-once verdict: the state decides.
	Verdict string `yaml:"verdict,omitempty"`
	// Timeout (the client gives up) and Retry (the framework's retry loop) as in the format.
	Timeout string `yaml:"timeout,omitempty"`
	Retry   *Retry `yaml:"retry,omitempty"`
	Assert  string `yaml:"assert,omitempty"`
	Sleep   string `yaml:"sleep,omitempty"`
}

// Retry is a call step's retry: loop.
type Retry struct {
	Attempts int      `yaml:"attempts"`
	On       []string `yaml:"on,flow"`
	Backoff  string   `yaml:"backoff,omitempty"`
}

// File is the name the scenario is written under.
func (s *Spec) File() string { return safefile.Stem(s.Tool+"."+s.Check) + ".yaml" }

// Scenario builds the in-memory scenario, sharing base's endpoints, services, sinks and probes,
// as the loader would build it from the written file.
func (s *Spec) Scenario(base *scenario.Scenario) (*scenario.Scenario, error) {
	where := "check " + s.Tool + " " + s.Check
	sc := &scenario.Scenario{
		Name: s.Name, Tags: s.Tags, Trials: max(s.Trials, 1), Endpoint: s.Endpoint, File: where,
		Pos: scenario.Pos{File: where}, Endpoints: base.Endpoints, Services: base.Services, Sinks: base.Sinks,
		Probes: base.Probes, AllowHosts: base.AllowHosts, Config: base.Config, Secrets: base.Secrets,
	}
	env := scenario.CheckEnv()
	for name := range base.Sinks {
		env[name] = map[string]any{}
	}
	for name := range base.Probes {
		env[name] = assert.Dynamic
	}
	tools := map[string]string{}
	for i, ss := range s.Steps {
		st := &scenario.Step{Index: i, ID: ss.ID, Pos: scenario.Pos{File: where, Line: i + 1, Col: 5}}
		if st.ID == "" {
			st.ID = fmt.Sprintf("step%d", i+1)
		}
		if ss.Sleep != "" {
			d, err := time.ParseDuration(ss.Sleep)
			if err != nil {
				return nil, fmt.Errorf("%s: step %s: sleep: %w", where, st.ID, err)
			}
			st.Kind, st.Sleep = scenario.SleepStep, d
			sc.Steps = append(sc.Steps, st)
			continue
		}
		if ss.Assert != "" {
			p, err := assert.Compile(ss.Assert, env)
			if err != nil {
				return nil, fmt.Errorf("%s: step %s: %w", where, st.ID, err)
			}
			st.Kind, st.Assert = scenario.AssertStep, p
			sc.Steps = append(sc.Steps, st)
			continue
		}
		st.Kind, st.Endpoint, st.Tool = scenario.CallStep, s.Endpoint, ss.CallTool
		if ss.RetryOf != "" {
			st.Tool = tools[ss.RetryOf]
		}
		tools[st.ID] = st.Tool
		st.RetryOf, st.LoseResponse, st.WithoutKey = ss.RetryOf, ss.LoseResponse, ss.WithoutKey
		st.VerdictOff = ss.Verdict == "off"
		st.Fanout, st.Sync = max(ss.Fanout, 1), "last-byte"
		if err := ss.timing(st); err != nil {
			return nil, fmt.Errorf("%s: step %s: %w", where, st.ID, err)
		}
		st.Expect = outcome.OK
		if ss.Expect != "" {
			st.Expect = outcome.Outcome(ss.Expect)
		}
		if ss.Args != nil {
			a, err := compileArgs(ss.Args, env)
			if err != nil {
				return nil, fmt.Errorf("%s: step %s: args: %w", where, st.ID, err)
			}
			st.Args = a
		}
		if ss.Key != "" {
			t, err := assert.CompileTemplate(ss.Key, env)
			if err != nil {
				return nil, fmt.Errorf("%s: step %s: key: %w", where, st.ID, err)
			}
			st.Key = t
		}
		env[st.ID] = assert.CallResult{}
		if st.Fanout > 1 {
			env[st.ID] = assert.FanoutResult{}
		}
		sc.Steps = append(sc.Steps, st)
	}
	return sc, nil
}

// timing sets a call step's timeout and retry loop.
func (ss Step) timing(st *scenario.Step) error {
	if ss.Timeout != "" {
		d, err := time.ParseDuration(ss.Timeout)
		if err != nil {
			return fmt.Errorf("timeout: %w", err)
		}
		st.Timeout = d
	}
	if r := ss.Retry; r != nil {
		st.Retry = &scenario.Retry{Attempts: r.Attempts}
		for _, on := range r.On {
			st.Retry.On = append(st.Retry.On, scenario.RetryOn(on))
		}
		if r.Backoff != "" {
			d, err := time.ParseDuration(r.Backoff)
			if err != nil {
				return fmt.Errorf("retry.backoff: %w", err)
			}
			st.Retry.Backoff = d
		}
	}
	return nil
}

// compileArgs turns strings with {{ }} into templates, as the loader does.
func compileArgs(v any, env assert.Env) (any, error) {
	return jsonvalue.MapErr(v, func(leaf any) (any, error) {
		if x, ok := leaf.(string); ok && assert.HasTemplate(x) {
			return assert.CompileTemplate(x, env)
		}
		return leaf, nil
	})
}

// PlainArgs turns loaded arguments back into what was written: templates become their source.
func PlainArgs(v any) any {
	return jsonvalue.Map(v, func(leaf any) any {
		if t, ok := leaf.(*assert.Template); ok {
			return t.Source
		}
		return leaf
	})
}
