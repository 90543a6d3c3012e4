package decode

import (
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/schema"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// callStep decodes a call step's fields and derives the outcome it expects.
func (f *file) callStep(st *scenario.Step, m map[string]*yaml.Node, env assert.Env) {
	if x := m["call_tool"]; x != nil {
		st.Tool = f.Str(x, "call_tool")
	}
	if x := m["endpoint"]; x != nil {
		st.Endpoint = f.Str(x, "endpoint")
		st.EndpointPos = f.Pos(x)
	}
	if x := m["retry_of"]; x != nil {
		st.RetryOfPos = f.Pos(x)
	}
	if x := m["args"]; x != nil {
		if x.Kind != yaml.MappingNode {
			f.Errf(x, "args is a mapping such as {accountId: acct_1, amount: 10}", "args must be a mapping, got %s", yamlfile.KindName(x))
		} else {
			st.Args = f.args(x, env)
		}
	}
	if x := m["key"]; x != nil {
		st.Key = f.Template(x, "key", env)
	}
	if x := m["retry_of"]; x != nil {
		st.RetryOf = f.Str(x, "retry_of")
	}
	st.Fanout = 1
	if x := m["fanout"]; x != nil {
		st.Fanout = f.Int(x, "fanout", 1, scenario.MaxFanout)
	}
	// last-byte is the default: it caught more races than barrier in the benchmark (BENCHMARKS.md).
	st.Sync = dispatch.SyncLastByte
	if x := m["sync"]; x != nil {
		st.SyncPos = f.Pos(x)
		if v, ok := yamlfile.Choice(f.File, x, "sync", dispatch.Syncs,
			"sync is last-byte (all but the final byte beforehand), barrier (each copy writes its whole request at the release) or single-packet (HTTP/2: every stream's end in one write)"); ok {
			st.Sync = v
		}
	}
	if x := m["stagger"]; x != nil {
		st.StaggerMin, st.StaggerMax = f.stagger(x)
	}
	if x := m["timeout"]; x != nil {
		var ok bool
		if st.Timeout, ok = f.DurationOK(x, "timeout"); ok && st.Timeout == 0 {
			f.Errf(x, "use a duration above zero, such as 200ms", "timeout must be above zero")
		}
	}
	if x := m["lose_response"]; x != nil {
		st.LoseResponse = f.Bool(x, "lose_response")
	}
	if x := m["without_key"]; x != nil {
		st.WithoutKey = f.Bool(x, "without_key")
	}
	if x := m["retry"]; x != nil {
		st.Retry = f.retry(x)
	}
	if x := m["verdict"]; x != nil {
		v, _ := yamlfile.Choice(f.File, x, "verdict", []string{"on", "off"}, "verdict is on (the default) or off (this step's calls are not judged for exactly-once)")
		st.VerdictOff = v == "off"
	}
	switch {
	case st.Fanout > 1 || st.Timeout > 0 || st.Retry != nil:
		st.Expect = outcome.Any
	case st.LoseResponse:
		st.Expect = outcome.Info
	case st.WithoutKey:
		st.Expect = outcome.Fail
	default:
		st.Expect = outcome.OK
	}
	if x := m["expect"]; x != nil {
		switch v := outcome.Outcome(f.Str(x, "expect")); v {
		case outcome.OK, outcome.Fail, outcome.Info, outcome.Any:
			st.Expect = v
		default:
			f.Errf(x, "expect is ok, fail, info or any", "unknown outcome %q", v)
		}
	}
	if x := m["expect_error"]; x != nil && f.Bool(x, "expect_error") {
		if m["expect"] != nil {
			f.Errf(x, "keep one: expect_error: true means expect: fail", "expect_error and expect are both given")
		}
		st.Expect = outcome.Fail
	}
	if st.LoseResponse && st.Fanout > 1 {
		f.Errf(m["lose_response"], "lose the response of a single call, then fan out its retries", "lose_response cannot be combined with fanout")
	}
	f.refuseIgnored(st, m)
	if st.WithoutKey && (m["key"] != nil) {
		f.Errf(m["without_key"], "remove key: or without_key:", "without_key and key are both given")
	}
}

// stagger decodes "2ms" (0 to 2ms) or "500us..2ms".
func (f *file) stagger(n *yaml.Node) (time.Duration, time.Duration) {
	v := f.Str(n, "stagger")
	lo, hi := "0s", v
	if a, b, ok := strings.Cut(v, ".."); ok {
		lo, hi = a, b
	}
	min, err1 := time.ParseDuration(strings.TrimSpace(lo))
	max, err2 := time.ParseDuration(strings.TrimSpace(hi))
	switch {
	case err1 != nil || err2 != nil || min < 0 || max < min:
		f.Errf(n, "write stagger: 2ms (offsets from 0 to 2ms) or stagger: 100us..2ms", "stagger %q is not a duration or a range of durations", v)
	case max > time.Second:
		f.Errf(n, "stagger aims at windows inside one request: keep it under a second", "stagger %q is too wide", v)
	}
	return min, max
}

// args decodes a tool's arguments; strings with {{ }} become templates rendered per call.
func (f *file) args(n *yaml.Node, env assert.Env) any {
	switch n.Kind {
	case yaml.MappingNode:
		out := map[string]any{}
		for _, kv := range f.Entries(n, "args") {
			out[kv[0].Value] = f.args(kv[1], env)
		}
		return out
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			out = append(out, f.args(c, env))
		}
		return out
	case yaml.ScalarNode:
		if n.Tag == "!!str" && assert.HasTemplate(n.Value) {
			return f.Template(n, "template", env)
		}
	}
	return f.Value(n)
}

// retry decodes a call step's retry: policy.
func (f *file) retry(n *yaml.Node) *scenario.Retry {
	m, ok := f.fields(n, "retry", schema.Retry)
	if !ok {
		return nil
	}
	r := &scenario.Retry{Attempts: 3, On: []scenario.RetryOn{scenario.RetryInfo, scenario.RetryConflict}, Backoff: 100 * time.Millisecond}
	if x := m["attempts"]; x != nil {
		r.Attempts = f.Int(x, "retry.attempts", 1, 100)
	}
	if x := m["on"]; x != nil {
		r.On = nil
		for i, o := range f.Strings(x, "retry.on") {
			r.On = append(r.On, scenario.RetryOn(o))
			if !slices.Contains(scenario.RetryOns, scenario.RetryOn(o)) {
				f.ErrAt(f.Pos(item(x, i)), "retry.on lists info, conflict, 5xx or fail", "unknown retry condition %q", o)
			}
		}
	}
	if x := m["backoff"]; x != nil {
		r.Backoff = f.Duration(x, "retry.backoff")
	}
	return r
}

// item is the node of a list's i-th string, for an error's position: the list's element, or the
// node itself when a single string stood where the list belongs (Strings accepts that form).
func item(n *yaml.Node, i int) *yaml.Node {
	if n.Kind == yaml.SequenceNode && i < len(n.Content) {
		return n.Content[i]
	}
	return n
}
