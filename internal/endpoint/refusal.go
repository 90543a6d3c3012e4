package endpoint

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/idemtest/idemtest/internal/jsonvalue"
	"github.com/idemtest/idemtest/internal/outcome"
)

// A refusal is a refusal whatever its shape (DESIGN §8): an HTTP 4xx, an MCP isError result, a
// JSON-RPC error, and an error-shaped success, an answer that says ok on the wire and error in
// its body. This file is the one place that recognises the last kind and the in-flight
// duplicate among refusals; both transports call it when they classify an answer, so the
// runner, the verdict, check, sweep and the proxy all see a refusal as outcome.Fail.

// Shape is one declared error-shaped success: the answer is a refusal when every dotted path
// holds its value (JSON-equal), as an endpoint's refusal: [{status: failed}] declares.
type Shape map[string]any

// Refusals recognises the error-shaped successes of one endpoint: the usual shapes
// ({"status":"error"}, {"success":false}, {"ok":false}, a lone {"error":…}) and Declared.
type Refusals struct {
	Declared []Shape
}

// DefaultConflictMatch recognises the usual wording of an in-flight duplicate.
var DefaultConflictMatch = regexp.MustCompile(`(?i)in[ _-]?progress|in[ _-]?flight|concurrent|conflict|409`)

// loneErrorCompanions are the fields an error object may carry beside "error" and still be a
// lone error: what describes the error, nothing an execution would have made.
var loneErrorCompanions = map[string]bool{
	"error": true, "message": true, "code": true, "detail": true, "details": true, "type": true,
	"title": true, "status": true, "statusCode": true, "requestId": true,
}

// ErrorShaped reports whether an answer is one of the usual error-shaped successes:
// {"status":"error"}, {"success":false}, {"ok":false} or a lone {"error":…} (an error and only
// what describes it).
func ErrorShaped(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if s, ok := m["status"].(string); ok && strings.EqualFold(s, "error") {
		return true
	}
	for _, k := range []string{"success", "ok"} {
		if b, ok := m[k].(bool); ok && !b {
			return true
		}
	}
	e, ok := m["error"]
	if !ok || e == nil || e == "" || e == false {
		return false
	}
	for k := range m {
		if !loneErrorCompanions[k] {
			return false
		}
	}
	return true
}

// Refused reports whether an answer that succeeded on the wire is an error-shaped success, with
// the words to show for it ("error-shaped answer: Request not found").
func (r Refusals) Refused(v any) (string, bool) {
	if !ErrorShaped(v) && !r.declared(v) {
		return "", false
	}
	return Detail("error-shaped answer", v), true
}

func (r Refusals) declared(v any) bool {
	for _, s := range r.Declared {
		if len(s) == 0 {
			continue
		}
		all := true
		for path, want := range s {
			got := jsonvalue.Lookup(v, path)
			all = all && got != nil && jsonvalue.Equal(got, want)
		}
		if all {
			return true
		}
	}
	return false
}

// Conflict reports whether a refusal's answer (its JSON body or structured content, and its
// text) says a request with the key is in progress: a 409 status field, or a code, type, error
// or message that match says so ("idempotency_key_in_progress").
func Conflict(v any, text string, match *regexp.Regexp) bool {
	if match == nil {
		match = DefaultConflictMatch
	}
	if m, ok := v.(map[string]any); ok {
		for _, k := range []string{"code", "type", "error", "message"} {
			if s, ok := m[k].(string); ok && match.MatchString(s) {
				return true
			}
		}
		if st, ok := m["status"].(float64); ok && st == 409 {
			return true
		}
	}
	return text != "" && match.MatchString(text)
}

// Refuse turns an ok result whose answer is an error-shaped success into the refusal it is:
// outcome fail, its words as the error, and conflict when they say the key is in progress.
// Any other result is returned as it is.
func (r Refusals) Refuse(res Result, match *regexp.Regexp) Result {
	if res.Outcome != outcome.OK {
		return res
	}
	msg, ok := r.Refused(res.Result)
	if !ok {
		return res
	}
	res.Outcome, res.Error = outcome.Fail, msg
	res.Conflict = Conflict(res.Result, "", match)
	return res
}

// String describes a declared shape as written: status == "failed", ok == false.
func (s Shape) String() string {
	var parts []string
	for _, p := range jsonvalue.SortedKeys(s) {
		parts = append(parts, fmt.Sprintf("%s == %s", p, jsonvalue.Canonical(s[p])))
	}
	return strings.Join(parts, " && ")
}
