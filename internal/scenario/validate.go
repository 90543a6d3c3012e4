package scenario

import (
	"fmt"
	"strings"

	"github.com/idemtest/idemtest/internal/assert"
)

// validate checks what needs the whole scenario: ids, references, endpoints, hosts.
func (f *file) validate(s *Scenario, hosts []string) {
	ids := map[string]*Step{}
	for _, st := range s.Steps {
		if prev, dup := ids[st.ID]; dup {
			f.errAt(st.Pos, fmt.Sprintf("the first is at line %d; ids must be unique", prev.Pos.Line), "duplicate step id %q", st.ID)
			continue
		}
		ids[st.ID] = st
	}
	used := map[string]bool{}
	for _, st := range s.Steps {
		if st.Kind != CallStep {
			continue
		}
		if st.RetryOf != "" {
			orig, ok := ids[st.RetryOf]
			switch {
			case !ok || orig.Index >= st.Index || orig.Kind != CallStep:
				hint := "retry_of names an earlier call step's id"
				if c := closest(st.RetryOf, keys(ids)); c != "" {
					hint = fmt.Sprintf("did you mean %q?", c)
				}
				f.errAt(st.retryOfPos, hint, "retry_of %q is not an earlier call step", st.RetryOf)
			default:
				if st.Tool == "" {
					st.Tool = orig.Tool
				} else if st.Tool != orig.Tool {
					f.errAt(st.Pos, "a retry repeats the same call: drop call_tool or make it match", "retry_of %q calls %s, this step calls %s", st.RetryOf, orig.Tool, st.Tool)
				}
				if st.Endpoint == "" {
					st.Endpoint = orig.Endpoint
				}
				if st.WithoutKey || orig.WithoutKey {
					f.errAt(st.Pos, "", "retry_of cannot be combined with without_key")
				}
			}
		}
		if st.Tool == "" && st.RetryOf == "" {
			f.errAt(st.Pos, "", "call step needs call_tool: NAME")
		}
		if st.Endpoint == "" && s.Endpoint != "" {
			st.Endpoint, st.endpointPos = s.Endpoint, s.endpointPos
		}
		switch {
		case st.Endpoint != "":
			if _, ok := s.Endpoints[st.Endpoint]; !ok {
				names := keys(s.Endpoints)
				hint := "endpoints defined: " + strings.Join(names, ", ")
				if c := closest(st.Endpoint, names); c != "" {
					hint = fmt.Sprintf("did you mean %q?", c)
				}
				f.errAt(st.endpointPos, hint, "unknown endpoint %q", st.Endpoint)
				continue
			}
		case len(s.Endpoints) == 1:
			st.Endpoint = keys(s.Endpoints)[0]
		case len(s.Endpoints) == 0:
			f.errAt(st.Pos, "define endpoints: in "+ConfigName+" or in this scenario", "no endpoint to call %s on", st.Tool)
			continue
		default:
			f.errAt(st.Pos, "endpoints defined: "+strings.Join(keys(s.Endpoints), ", "), "several endpoints are defined: set endpoint: on this step or on the scenario")
			continue
		}
		used[st.Endpoint] = true
		f.refuseSinglePacket(st, s.Endpoints[st.Endpoint])
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
		if err := CheckHost(u.Source, append(hosts, ep.AllowHosts...)); err != nil {
			f.errAt(ep.urlPos, fmt.Sprintf("idemtest sends duplicate mutating calls; allow this host with allow_hosts: [%s] in %s or --allow-host %s", err.Host, ConfigName, err.Host),
				"endpoint %s: %v", name, err)
		}
	}
	f.checkProbeHosts(s, hosts)
}
