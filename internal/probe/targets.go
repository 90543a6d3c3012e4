package probe

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/scenario"
)

// Check applies the scenario's outbound policy to the targets of its probes, rendered in env,
// before the trial's first call. The dial hooks check every connection again; this only makes
// the error come first, with the name of the probe refused, which it returns with the error.
// A target that cannot be rendered yet is checked when it is used.
func Check(sc *scenario.Scenario, env map[string]any) (*scenario.Probe, error) {
	policy := netguard.New(sc.AllowHosts)
	for _, name := range Names(sc) {
		p := sc.Probes[name]
		targets, err := probeTargets(p, env)
		if err != nil {
			continue
		}
		for _, t := range targets {
			if err := policy.Check(t.host, t.port); err != nil {
				return p, fmt.Errorf("probe %s: %w; allow it with allow_hosts or --allow-host %s", name, err, t.host)
			}
		}
	}
	return nil, nil
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
