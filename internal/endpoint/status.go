package endpoint

import "net/http"

// ClassifyStatus maps an HTTP status code to an outcome (DESIGN §2), with a message for every
// outcome but ok.
func ClassifyStatus(status int) (Outcome, string) { return classify(status) }

// IsReplayed reports whether an HTTP response's headers mark it as a replay
// (Idempotent-Replayed: true).
func IsReplayed(h http.Header) bool { return isTrue(h.Get("Idempotent-Replayed")) }
