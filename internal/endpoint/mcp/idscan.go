package mcp

import (
	"bytes"
	"encoding/json"
)

// IDScanner finds the top-level "id" of a JSON-RPC message fed to it in pieces, without holding
// the message: what the proxy uses to answer for a line it drops at its cap. The zero value is
// ready to use.
type IDScanner struct{ s idScanner }

// Feed reads the next piece of the message.
func (x *IDScanner) Feed(b []byte) { x.s.feed(b) }

// ID is the message's top-level id as JSON text (nil when it has none, a null one, or one too
// long to be an id), and whether the message has a top-level "method" (a request or a
// notification, not a response).
func (x *IDScanner) ID() (id json.RawMessage, method bool) {
	v := bytes.TrimSpace(x.s.id)
	if x.s.tooLong || len(v) == 0 || !json.Valid(v) || bytes.Equal(v, []byte("null")) {
		return nil, x.s.method
	}
	return json.RawMessage(bytes.Clone(v)), x.s.method
}
