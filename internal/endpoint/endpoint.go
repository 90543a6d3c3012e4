package endpoint

import (
	"context"
	"time"

	"github.com/idemtest/idemtest/internal/outcome"
)

// Request is one tool call.
type Request struct {
	Tool string
	Args map[string]any
	// Key is the idempotency key; "" sends none.
	Key string
	// Timeout is how long the client waits; 0 uses the endpoint's default.
	Timeout time.Duration
	// LoseResponse lets the server finish, then discards its answer (outcome info).
	LoseResponse bool
}

// Result is a call's classified outcome and what came back: the first of a call's five shapes
// (result/doc.go), the one an Endpoint's Call or Prepared returns. It is the wire's view (raw
// body, every header, the four instants), knows no step, copy or key; the runner turns it into
// the other shapes and nothing else keeps it.
type Result struct {
	Outcome  outcome.Outcome
	Status   int
	Error    string
	Body     []byte
	Result   any
	Replayed bool
	Conflict bool
	// Lost is set when the response was discarded on purpose (LoseResponse).
	Lost bool
	// Discarded is the outcome the discarded response had (ok when the server executed), ""
	// when nothing was discarded: the agent never heard it, the verdict does.
	Discarded outcome.Outcome
	Headers   map[string]string
	// TraceID is the W3C trace id the call carried in its traceparent ("" when it was not
	// sent): the server's spans of the call are in this trace.
	TraceID string
	// Start is when the call began; Sent when its last byte was handed to the connection (for
	// a fan-out copy, its release; zero if unknown);
	// Received when the response was complete.
	Start    time.Time
	Sent     time.Time
	Received time.Time
	// Answered is when the response began to arrive (its headers were read), zero if never.
	Answered time.Time
	Duration time.Duration
}

// Endpoint is a tool server. Call never returns an error: a failing or hanging server is an
// outcome, not a crash.
type Endpoint interface {
	Call(ctx context.Context, req Request) Result
	// Prepare readies a call to be released later, together with other copies.
	Prepare(ctx context.Context, req Request, opts PrepareOptions) Prepared
	Close() error
}

// Hold says which bytes of an HTTP/1.1 request a last-byte release holds back.
type Hold int

const (
	// HoldBody holds back the body's last byte: the server has parsed the headers and its
	// handler is already waiting for the body when the byte arrives.
	HoldBody Hold = iota
	// HoldHeaderEnd holds back the final byte of the header terminator and the body.
	HoldHeaderEnd
)

// PrepareOptions say how far a copy gets before its release.
type PrepareOptions struct {
	// LastByte writes all of the request but the held-back bytes during Prepare.
	LastByte bool
	Hold     Hold
}

// Prepared is a call ready to be released: Send writes what is left, Wait reads the answer.
// Wait may be called before Send returns (it blocks until the answer comes).
type Prepared interface {
	Send()
	Wait(ctx context.Context) Result
	// Abort releases what Prepare acquired without sending.
	Abort()
}

// Fire sends a prepared call and waits for its answer.
func Fire(ctx context.Context, p Prepared) Result {
	p.Send()
	return p.Wait(ctx)
}
