package scenario

import (
	"fmt"
	"sort"
	"strings"
)

// checkProbeHosts applies the outbound policy to the probes' targets that are written out (a
// templated host is checked when the runner renders it, before the trial's first call).
func (f *file) checkProbeHosts(s *Scenario, hosts []string) {
	names := keys(s.Probes)
	sort.Strings(names)
	for _, name := range names {
		p := s.Probes[name]
		var targets []string
		switch {
		case p.HTTP != nil && p.HTTP.URL != nil:
			targets = []string{p.HTTP.URL.Source}
		case p.Redis != nil && p.Redis.Addr != nil && !strings.HasPrefix(p.Redis.Addr.Source, "/"):
			targets = []string{"redis://" + p.Redis.Addr.Source}
		case p.SQL != nil && p.SQL.DSN != nil:
			targets = DSNHosts(p.SQL.DSN.Source)
		}
		for _, t := range targets {
			if err := CheckHost(t, hosts); err != nil {
				f.errAt(p.Pos, fmt.Sprintf("idemtest reads only from loopback and allowed hosts; allow this host with allow_hosts: [%s] in %s or --allow-host %s", err.Host, ConfigName, err.Host),
					"probe %s: %v", name, err)
				break
			}
		}
	}
}

// DSNHosts returns a PostgreSQL connection string's hosts as URLs for CheckHost: the URL form
// (postgres://u@h1:5432,h2/db) and the keyword form (host=h1,h2 port=5432). Unix socket
// directories are local and left out.
func DSNHosts(dsn string) []string {
	var hosts []string
	if i := strings.Index(dsn, "://"); i >= 0 {
		rest := dsn[i+3:]
		if j := strings.IndexAny(rest, "/?"); j >= 0 {
			rest = rest[:j]
		}
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			rest = rest[at+1:]
		}
		hosts = strings.Split(rest, ",")
	} else {
		for _, field := range strings.Fields(dsn) {
			if v, ok := strings.CutPrefix(field, "host="); ok {
				hosts = strings.Split(strings.Trim(v, "'"), ",")
			}
		}
	}
	var out []string
	for _, h := range hosts {
		if h == "" || strings.HasPrefix(h, "/") || strings.HasPrefix(h, "%2F") || strings.HasPrefix(h, "%2f") {
			continue
		}
		out = append(out, "postgres://"+h)
	}
	return out
}
