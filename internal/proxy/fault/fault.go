package fault

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind is what the proxy does to a call instead of forwarding it plainly.
type Kind string

const (
	// LoseResponse forwards the call, lets the server commit, and never gives the agent the
	// answer (MCP: the answer is dropped; HTTP: the connection is reset after the upstream
	// answered).
	LoseResponse Kind = "lose-response"
	// Timeout holds the call until the agent gives up (MCP) and only then forwards it, so the
	// server executes it late, after the agent stopped waiting; its answer is dropped. Plain
	// HTTP forwards the call and withholds the answer until the agent gives up, then resets the
	// connection.
	Timeout Kind = "timeout"
	// Error answers the agent with an error status without forwarding (HTTP: that status;
	// MCP: a JSON-RPC error).
	Error Kind = "error"
	// Delay forwards the call after a pause.
	Delay Kind = "delay"
)

// Fault is one fault to inject: on the Nth call (from 1) of Tool.
type Fault struct {
	Kind   Kind
	Status int           // Error
	Delay  time.Duration // Delay
	Tool   string
	N      int
}

// String is the fault's name in traces and reports: "lose-response", "error:503", "delay:2s".
func (f Fault) String() string {
	switch f.Kind {
	case Error:
		return fmt.Sprintf("error:%d", f.Status)
	case Delay:
		return "delay:" + f.Delay.String()
	}
	return string(f.Kind)
}

// HidesOutcome reports whether the agent is left not knowing whether the call took effect, so
// that a retry with the same key is what it owes.
func (f Fault) HidesOutcome() bool {
	return f.Kind == LoseResponse || f.Kind == Timeout || f.Kind == Error
}

// Parse reads KIND:TOOL#N, KIND being lose-response, timeout, error:STATUS or delay:DURATION.
func Parse(s string) (Fault, error) {
	bad := func(why string) (Fault, error) {
		return Fault{}, fmt.Errorf("--fault %q: %s (want KIND:TOOL#N, KIND one of lose-response, timeout, error:503, delay:2s)", s, why)
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return bad("no tool")
	}
	kind, target := s[:i], s[i+1:]
	tool, nth, ok := strings.Cut(target, "#")
	if !ok || tool == "" {
		return bad("no TOOL#N")
	}
	n, err := strconv.Atoi(nth)
	if err != nil || n < 1 {
		return bad("N must be a call number from 1")
	}
	f, why := parseKind(kind)
	if why != "" {
		return bad(why)
	}
	f.Tool, f.N = tool, n
	return f, nil
}

// ParseKinds reads the comma-separated fault kinds --fault-rate picks from: lose-response,
// timeout, error[:STATUS], delay:DURATION.
func ParseKinds(list []string) ([]Fault, error) {
	var out []Fault
	for _, k := range list {
		f, why := parseKind(k)
		if why != "" {
			return nil, fmt.Errorf("--fault-kinds %q: %s (kinds: lose-response, timeout, error, error:500, delay:2s)", k, why)
		}
		out = append(out, f)
	}
	return out, nil
}

// parseKind reads a fault kind without its target; why says what is wrong, "" when nothing.
func parseKind(kind string) (Fault, string) {
	var f Fault
	name, arg, hasArg := strings.Cut(kind, ":")
	switch Kind(name) {
	case LoseResponse, Timeout:
		if hasArg {
			return f, name + " takes no argument"
		}
		f.Kind = Kind(name)
	case Error:
		f.Kind, f.Status = Error, 503
		if hasArg {
			st, err := strconv.Atoi(arg)
			if err != nil || st < 400 || st > 599 {
				return f, "error status must be 400-599"
			}
			f.Status = st
		}
	case Delay:
		d, err := time.ParseDuration(arg)
		if !hasArg || err != nil || d <= 0 {
			return f, "delay needs a positive duration, as delay:2s"
		}
		f.Kind, f.Delay = Delay, d
	default:
		return f, "unknown kind " + strconv.Quote(name)
	}
	return f, ""
}
