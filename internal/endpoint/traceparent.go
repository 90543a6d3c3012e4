package endpoint

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
)

// TraceParentHeader is the W3C Trace Context header every call carries (over MCP, the
// traceparent entry of params._meta), so that a call in a report opens the server's own trace.
const TraceParentHeader = "traceparent"

// NewTraceParent returns a W3C traceparent for one call: a fresh trace id and parent span id,
// sampled (the server should record the call). The trace id is the value's second field.
func NewTraceParent() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	if allZero(b[:16]) {
		b[15] = 1 // the all-zero trace id is invalid
	}
	if allZero(b[16:]) {
		b[23] = 1
	}
	return "00-" + hex.EncodeToString(b[:16]) + "-" + hex.EncodeToString(b[16:]) + "-01"
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// TraceIDOf is the trace id (32 lowercase hex digits) of a traceparent, "" when it is not one.
func TraceIDOf(traceparent string) string {
	parts := strings.Split(strings.TrimSpace(traceparent), "-")
	if len(parts) < 4 || len(parts[1]) != 32 {
		return ""
	}
	if _, err := hex.DecodeString(parts[1]); err != nil {
		return ""
	}
	return strings.ToLower(parts[1])
}

// setTraceParent gives an HTTP request a traceparent, unless the endpoint's configured headers
// already set one, and returns the trace id the request carries.
func setTraceParent(h http.Header) string {
	if h.Get(TraceParentHeader) == "" {
		h.Set(TraceParentHeader, NewTraceParent())
	}
	return TraceIDOf(h.Get(TraceParentHeader))
}
