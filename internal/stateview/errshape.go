package stateview

import "strings"

// ErrorShaped reports whether a successful answer reports an error in its body, as some servers
// answer a call they did not execute ({"status": "error", "message": "Request not found"},
// {"error": "…"}, {"success": false}). Such an answer is no evidence of an execution: only the
// state, the sinks or the declared effects can say whether one happened.
func ErrorShaped(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, k := range []string{"status", "state", "result"} {
		if s, ok := m[k].(string); ok {
			switch strings.ToLower(s) {
			case "error", "failed", "failure", "fail":
				return true
			}
		}
	}
	for _, k := range []string{"success", "ok"} {
		if b, ok := m[k].(bool); ok && !b {
			return true
		}
	}
	if e, ok := m["error"]; ok && e != nil && e != "" && e != false {
		return true
	}
	return false
}
