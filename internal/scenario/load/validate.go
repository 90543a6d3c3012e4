package load

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// validate checks what needs the whole scenario: ids, references, endpoints, hosts.
func validate(f *yamlfile.File, s *scenario.Scenario, hosts []string, missing *endpointRefs) {
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
					st.Endpoint, st.EndpointPos = orig.Endpoint, orig.EndpointPos
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
				pos := st.EndpointPos
				if pos.Line == 0 {
					pos = st.Pos
				}
				missing.add(st.Endpoint, pos, st.Tool, "")
				continue
			}
		case len(s.Endpoints) == 1:
			st.Endpoint = slices.Sorted(maps.Keys(s.Endpoints))[0]
		case len(s.Endpoints) == 0:
			missing.add("", st.Pos, st.Tool, "")
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
		var urls []*assert.Template
		switch {
		case ep.HTTP != nil:
			u, urls = ep.HTTP.URL, ep.HTTP.URLs
			if u == nil && urls == nil && ep.HTTP.Spec == nil {
				u = ep.HTTP.OpenAPI // a document read from a URL when the endpoint is used
			}
		case ep.MCP != nil:
			u, urls = ep.MCP.URL, ep.MCP.URLs
		}
		targets, at := urls, ep.URLsPos
		if u != nil {
			targets, at = []*assert.Template{u}, []scenario.Pos{ep.URLPos}
		}
		// Every instance of a set is checked: the policy applies to each URL a call may go to.
		for i, t := range targets {
			if err := scenario.CheckHost(t.Source, append(hosts, ep.AllowHosts...)); err != nil {
				f.ErrAt(at[min(i, len(at)-1)], fmt.Sprintf("idemtest sends duplicate mutating calls; allow this host with allow_hosts: [%s] in %s or --allow-host %s", err.Host, scenario.ConfigName, err.Host),
					"endpoint %s: %v", name, err)
			}
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
	if st.Sync != dispatch.SyncSinglePacket || ep == nil || ep.MCP == nil {
		return
	}
	f.ErrAt(st.SyncPos, "use sync: barrier or last-byte for an MCP endpoint; single-packet is for HTTP endpoints that speak HTTP/2",
		"sync: single-packet needs an HTTP endpoint, and %s is MCP", ep.Name)
}

// validateProbes checks what needs the scenario's endpoints: a call_tool probe's endpoint and
// that its tool is not mutating.
func validateProbes(f *yamlfile.File, s *scenario.Scenario, missing *endpointRefs) {
	for _, name := range slices.Sorted(maps.Keys(s.Probes)) {
		p := s.Probes[name]
		if p.CallTool == nil {
			continue
		}
		t := p.CallTool
		epName := s.ProbeEndpoint(p)
		ep, ok := s.Endpoints[epName]
		switch {
		case !ok && epName == "" && len(s.Endpoints) == 0:
			missing.add("", p.Pos, t.Tool, "probe "+name+": ")
			continue
		case !ok && epName == "":
			f.ErrAt(p.Pos, "endpoints defined: "+strings.Join(slices.Sorted(maps.Keys(s.Endpoints)), ", "), "probe %s: several endpoints are defined: set endpoint: on the probe", name)
			continue
		case !ok:
			missing.add(epName, p.Pos, t.Tool, "probe "+name+": ")
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

// endpointRefs are a scenario's references to endpoints it does not have, by name ("" for a call
// that names none when none is defined), so that each missing endpoint is reported once, where
// it is first named, instead of once per step and probe.
type endpointRefs struct {
	first map[string]endpointRef
	count map[string]int
}

type endpointRef struct {
	pos  scenario.Pos
	tool string
	// by names what refers to the endpoint when it is not a call step ("probe listed: ").
	by string
}

func newEndpointRefs() *endpointRefs {
	return &endpointRefs{first: map[string]endpointRef{}, count: map[string]int{}}
}

// add records a reference to the missing endpoint name at pos, by a call of tool; by names
// the referrer in the message when it is not a call step.
func (r *endpointRefs) add(name string, pos scenario.Pos, tool, by string) {
	r.count[name]++
	if prev, ok := r.first[name]; ok && !before(pos, prev.pos) {
		return
	}
	r.first[name] = endpointRef{pos: pos, tool: tool, by: by}
}

func before(a, b scenario.Pos) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
}

// report adds one error per missing endpoint. lookedIn, when set, says where idemtest looked for
// a config and found none: the likeliest reason an endpoint is missing.
func (r *endpointRefs) report(f *yamlfile.File, s *scenario.Scenario, lookedIn string) {
	for _, name := range slices.Sorted(maps.Keys(r.first)) {
		ref := r.first[name]
		more := ""
		if n := r.count[name] - 1; n == 1 {
			more = " (and 1 more call)"
		} else if n > 1 {
			more = fmt.Sprintf(" (and %d more calls)", n)
		}
		if name == "" {
			f.ErrAt(ref.pos, endpointsHint(s, "", lookedIn), "%sno endpoint to call %s on%s", ref.by, ref.tool, more)
			continue
		}
		f.ErrAt(ref.pos, endpointsHint(s, name, lookedIn), "%sunknown endpoint %q%s", ref.by, name, more)
	}
}

// endpointsHint says what to do about a missing endpoint (name, or "" when a call names none):
// the endpoint most likely meant or those defined, and where to define one. It never lists
// nothing.
func endpointsHint(s *scenario.Scenario, name, lookedIn string) string {
	names := slices.Sorted(maps.Keys(s.Endpoints))
	var known string
	switch {
	case len(names) == 0:
	case name != "" && assert.Closest(name, names) != "":
		known = fmt.Sprintf("did you mean %q?", assert.Closest(name, names))
	default:
		known = "endpoints defined: " + strings.Join(names, ", ") + ";"
	}
	switch {
	case lookedIn != "":
		define := "define endpoints: in this scenario"
		if known != "" {
			define = "define it in this scenario"
		}
		return strings.TrimSpace(fmt.Sprintf("%s %s; %s, add an %s, or pass --config FILE", known, lookedIn, define, scenario.ConfigName))
	case known != "":
		return strings.TrimSuffix(known, ";")
	case s.Config != "":
		return fmt.Sprintf("neither %s nor this scenario defines endpoints: add endpoints: to one of them", s.Config)
	}
	return "define endpoints: in this scenario or in " + scenario.ConfigName
}
