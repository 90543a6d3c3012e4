package jsonreport

import (
	"io"

	"github.com/idemtest/idemtest/internal/proxy/agentverdict"
)

// WriteProxy writes the proxy's verdict on the agent, with its result in a word
// (agentverdict.Verdict.Result).
func WriteProxy(w io.Writer, v agentverdict.Verdict) error {
	return encode(w, struct {
		Result string `json:"result"`
		agentverdict.Verdict
	}{v.Result(), v})
}
