package endpoint

import (
	"fmt"
	"net/http"
	"time"

	"github.com/idemtest/idemtest/internal/outcome"
)

// ClassifyStatus maps an HTTP status code to an outcome (DESIGN §2), with a message for every
// outcome but ok.
func ClassifyStatus(status int) (outcome.Outcome, string) { return classify(status) }

// IsReplayed reports whether an HTTP response's headers mark it as a replay
// (Idempotent-Replayed: true).
func IsReplayed(h http.Header) bool { return isTrue(h.Get("Idempotent-Replayed")) }

// TooLarge is the error message of an answer cut off at max_response_bytes.
func TooLarge(limit int64) string {
	return fmt.Sprintf("response body is larger than %d bytes (raise max_response_bytes on the endpoint)", limit)
}

// Finish completes res: its outcome, its error message ("" for ok) and when it was received.
func Finish(res Result, o outcome.Outcome, msg string) Result {
	res.Outcome = o
	res.Error = msg
	res.Received = time.Now()
	res.Duration = res.Received.Sub(res.Start)
	return res
}
