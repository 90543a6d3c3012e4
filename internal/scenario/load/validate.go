package load

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// validate checks what needs the whole scenario: ids, references, endpoints, hosts.
func validate(f *yamlfile.File, s *scenario.Scenario, hosts []string) {
	ids := map[string]*scenario.Step{}
	for _, st := range s.Steps {
		if prev, dup := ids[st.ID]; dup {
			f.ErrAt(st.Pos, fmt.Sprintf("the first is at line %d; ids must be unique", prev.Pos.Line), "duplicate step id %q", st.ID)
			continue
		}
		ids[st.ID] = st
	}
	used := map[string]bool{}
	for _, st := range s.Steps {
		if st.Kind != scenario.CallStep {
			continue
		}
		if st.RetryOf != "" {
			orig, ok := ids[st.RetryOf]
			switch {
			case !ok || orig.Index >= st.Index || orig.Kind != scenario.CallStep:
				hint := "retry_of names an earlier call step's id"
				if c := assert.Closest(st.RetryOf, slices.Sorted(maps.Keys(ids))); c != "" {
					hint = fmt.Sprintf("did you mean %q?", c)
				}
				f.ErrAt(st.RetryOfPos, hint, "retry_of %q is not an earlier call step", st.RetryOf)
			default:
				if st.Tool == "" {
					st.Tool = orig.Tool
				} else if st.Tool != orig.Tool {
					f.ErrAt(st.Pos, "a retry repeats the same call: drop call_tool or make it match", "retry_of %q calls %s, this step calls %s", st.RetryOf, orig.Tool, st.Tool)
				}
				if st.Endpoint == "" {
					st.Endpoint = orig.Endpoint
				}
				if st.WithoutKey || orig.WithoutKey {
					f.ErrAt(st.Pos, "", "retry_of cannot be combined with without_key")
				}
			}
		}
		if st.Tool == "" && st.RetryOf == "" {
			f.ErrAt(st.Pos, "", "call step needs call_tool: NAME")
		}
		if st.Endpoint == "" && s.Endpoint != "" {
			st.Endpoint, st.EndpointPos = s.Endpoint, s.EndpointPos
		}
		switch {
		case st.Endpoint != "":
			if _, ok := s.Endpoints[st.Endpoint]; !ok {
				names := slices.Sorted(maps.Keys(s.Endpoints))
				hint := "endpoints defined: " + strings.Join(names, ", ")
				if c := assert.Closest(st.Endpoint, names); c != "" {
					hint = fmt.Sprintf("did you mean %q?", c)
				}
				f.ErrAt(st.EndpointPos, hint, "unknown endpoint %q", st.Endpoint)
				continue
			}
		case len(s.Endpoints) == 1:
			st.Endpoint = slices.Sorted(maps.Keys(s.Endpoints))[0]
		case len(s.Endpoints) == 0:
			f.ErrAt(st.Pos, "define endpoints: in "+scenario.ConfigName+" or in this scenario", "no endpoint to call %s on", st.Tool)
			continue
		default:
			f.ErrAt(st.Pos, "endpoints defined: "+strings.Join(slices.Sorted(maps.Keys(s.Endpoints)), ", "), "several endpoints are defined: set endpoint: on this step or on the scenario")
			continue
		}
		used[st.Endpoint] = true
		refuseSinglePacket(f, st, s.Endpoints[st.Endpoint])
	}
	for name := range used {
		ep := s.Endpoints[name]
		var u *assert.Template
		switch {
		case ep.HTTP != nil:
			u = ep.HTTP.URL
			if u == nil && ep.HTTP.Spec == nil {
				u = ep.HTTP.OpenAPI // a document read from a URL when the endpoint is used
			}
		case ep.MCP != nil:
			u = ep.MCP.URL
		}
		if u == nil {
			continue
		}
		if err := scenario.CheckHost(u.Source, append(hosts, ep.AllowHosts...)); err != nil {
			f.ErrAt(ep.URLPos, fmt.Sprintf("idemtest sends duplicate mutating calls; allow this host with allow_hosts: [%s] in %s or --allow-host %s", err.Host, scenario.ConfigName, err.Host),
				"endpoint %s: %v", name, err)
		}
	}
	checkProbeHosts(f, s, hosts)
}

// checkProbeHosts applies the outbound policy to the probes' targets that are written out (a
// templated host is checked when the runner renders it, before the trial's first call).
func checkProbeHosts(f *yamlfile.File, s *scenario.Scenario, hosts []string) {
	for _, name := range slices.Sorted(maps.Keys(s.Probes)) {
		p := s.Probes[name]
		var targets []string
		switch {
		case p.HTTP != nil && p.HTTP.URL != nil:
			targets = []string{p.HTTP.URL.Source}
		case p.Redis != nil && p.Redis.Addr != nil && !strings.HasPrefix(p.Redis.Addr.Source, "/"):
			targets = []string{"redis://" + p.Redis.Addr.Source}
		case p.SQL != nil && p.SQL.DSN != nil:
			targets = scenario.DSNHosts(p.SQL.DSN.Source)
		}
		for _, t := range targets {
			if err := scenario.CheckHost(t, hosts); err != nil {
				f.ErrAt(p.Pos, fmt.Sprintf("idemtest reads only from loopback and allowed hosts; allow this host with allow_hosts: [%s] in %s or --allow-host %s", err.Host, scenario.ConfigName, err.Host),
					"probe %s: %v", name, err)
				break
			}
		}
	}
}

// refuseSinglePacket reports sync: single-packet on an MCP endpoint, whose copies are requests
// of one session and cannot be released as HTTP/2 streams.
func refuseSinglePacket(f *yamlfile.File, st *scenario.Step, ep *scenario.Endpoint) {
	if st.Sync != outcome.SyncSinglePacket || ep == nil || ep.MCP == nil {
		return
	}
	f.ErrAt(st.SyncPos, "use sync: barrier or last-byte for an MCP endpoint; single-packet is for HTTP endpoints that speak HTTP/2",
		"sync: single-packet needs an HTTP endpoint, and %s is MCP", ep.Name)
}

// validateProbes checks what needs the scenario's endpoints: a call_tool probe's endpoint and
// that its tool is not mutating.
func validateProbes(f *yamlfile.File, s *scenario.Scenario) {
	for _, name := range slices.Sorted(maps.Keys(s.Probes)) {
		p := s.Probes[name]
		if p.CallTool == nil {
			continue
		}
		t := p.CallTool
		epName := s.ProbeEndpoint(p)
		ep, ok := s.Endpoints[epName]
		switch {
		case !ok && epName == "":
			f.ErrAt(p.Pos, "endpoints defined: "+strings.Join(slices.Sorted(maps.Keys(s.Endpoints)), ", "), "probe %s: several endpoints are defined: set endpoint: on the probe", name)
			continue
		case !ok:
			f.ErrAt(p.Pos, "endpoints defined: "+strings.Join(slices.Sorted(maps.Keys(s.Endpoints)), ", "), "probe %s: unknown endpoint %q", name, epName)
			continue
		}
		if ep.HTTP != nil && ep.Mutating == nil && ep.HTTP.OpenAPI != nil {
			// The document decides; one read when the endpoint is used is not known here.
			if o, ok := ep.HTTP.Spec.Operation(t.Tool); ok && o.Mutating {
				f.ErrAt(p.Pos, fmt.Sprintf("a probe must not change anything; %s is %s %s in %s", t.Tool, o.Method, o.Path, ep.HTTP.Spec.Source),
					"probe %s calls %s, which idemtest treats as mutating", name, t.Tool)
			}
		} else if ep.Mutating != nil || ep.HTTP != nil {
			if ep.IsMutating(t.Tool) {
				f.ErrAt(p.Pos, fmt.Sprintf("a probe must not change anything; list the mutating tools of endpoint %s under mutating: without %s", epName, t.Tool),
					"probe %s calls %s, which idemtest treats as mutating", name, t.Tool)
			}
		}
	}
}
