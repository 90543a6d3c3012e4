package runner

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/scenario"
)

// endpointAllowHosts is what an endpoint may connect to beyond loopback: the scenario's,
// the config's and --allow-host's hosts, and the endpoint's own.
func endpointAllowHosts(sc *scenario.Scenario, def *scenario.Endpoint) []string {
	out := make([]string, 0, len(sc.AllowHosts)+len(def.AllowHosts))
	return append(append(out, sc.AllowHosts...), def.AllowHosts...)
}

// preflight applies the outbound policy to every target of the trial whose host is templated
// ({{ services.x.host }}), before the trial's first call: the endpoints its steps call and the
// probes it defines. The dial hooks check every connection again; this only makes the error
// come first, with the name of what was refused. A target that cannot be rendered yet is
// checked when it is used.
func (r *runner) preflight(st *trialState) *Failure {
	sc := st.sc
	var first *scenario.Step
	if len(sc.Steps) > 0 {
		first = sc.Steps[0]
	}
	fail := func(pos scenario.Pos, msg string) *Failure {
		f := &Failure{Kind: FailError, Pos: pos, Message: msg}
		if first != nil {
			f.Step = first.ID
		}
		return f
	}
	seen := map[string]bool{}
	for _, step := range sc.Steps {
		if step.Kind != scenario.CallStep || seen[step.Endpoint] {
			continue
		}
		seen[step.Endpoint] = true
		if _, _, err := r.endpoint(sc, step.Endpoint); err != nil {
			return stepError(step, err)
		}
	}
	policy := netguard.New(sc.AllowHosts)
	env := r.probeEnv(st)
	for _, name := range sortedProbeNames(sc) {
		p := sc.Probes[name]
		targets, err := probeTargets(p, env)
		if err != nil {
			continue
		}
		for _, t := range targets {
			if err := policy.Check(t.host, t.port); err != nil {
				return fail(p.Pos, fmt.Sprintf("probe %s: %v; allow it with allow_hosts or --allow-host %s", name, err, t.host))
			}
		}
	}
	return nil
}

type target struct{ host, port string }

// probeTargets renders the hosts a probe connects to.
func probeTargets(p *scenario.Probe, env map[string]any) ([]target, error) {
	switch {
	case p.HTTP != nil:
		raw, err := evalText(p.HTTP.URL, env)
		if err != nil {
			return nil, err
		}
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return nil, err
		}
		return []target{{u.Hostname(), u.Port()}}, nil
	case p.Redis != nil:
		addr, err := evalText(p.Redis.Addr, env)
		if err != nil {
			return nil, err
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		return []target{{host, port}}, nil
	case p.SQL != nil:
		dsn, err := evalText(p.SQL.DSN, env)
		if err != nil {
			return nil, err
		}
		cfg, err := pgconn.ParseConfig(dsn)
		if err != nil {
			return nil, err
		}
		var out []target
		add := func(host string, port uint16) {
			if !strings.HasPrefix(host, "/") { // a unix socket directory is local
				out = append(out, target{host, fmt.Sprint(port)})
			}
		}
		add(cfg.Host, cfg.Port)
		for _, fb := range cfg.Fallbacks {
			add(fb.Host, fb.Port)
		}
		return out, nil
	}
	return nil, nil
}
