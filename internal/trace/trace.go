package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/safejson"
)

// Version is the trace format version this package writes and reads.
const Version = 1

// Header is a trace's first line.
type Header struct {
	// Version is the format version, the "idemtest_trace" field that identifies a trace.
	Version int `json:"idemtest_trace"`
	// Endpoint names the tool server the calls went to (a command line or a URL).
	Endpoint string `json:"endpoint"`
	// Transport is how the calls travelled: mcp-stdio, mcp-http or http.
	Transport string `json:"transport,omitempty"`
	// Started is when the trace began; every call's at_us counts from it.
	Started time.Time `json:"started"`
}

// The transports a header names.
const (
	// MCPStdio: an MCP server over stdio; the header's Endpoint is its command line.
	MCPStdio = "mcp-stdio"
	// MCPHTTP: an MCP server over streamable HTTP; the header's Endpoint is its URL.
	MCPHTTP = "mcp-http"
	// HTTP: plain JSON-over-HTTP tools; the header's Endpoint is their server's URL.
	HTTP = "http"
)

// MCPServer is the MCP server the trace was recorded against, as a command line (stdio) or a
// URL (streamable HTTP); ok is false for plain HTTP tools, whose header says too little to
// call them again.
func (h Header) MCPServer() (command, url string, ok bool) {
	switch h.Transport {
	case MCPStdio:
		return h.Endpoint, "", true
	case MCPHTTP:
		return "", h.Endpoint, true
	}
	return "", "", false
}

// Call is one tool call: what was sent, what the agent was told, and the fault injected. It
// is the fifth of a call's five shapes (result/doc.go): a line of the trace format, written by
// the proxy (as an agent's calls pass) and by run --trace (from result.Call, in runtrace), read
// by the agent verdict and sweep. Arguments and answer stay raw JSON, bounded to MaxLine, as
// the format a file on disk must keep whatever the code's model becomes.
type Call struct {
	Seq  int    `json:"seq"`
	AtUS int64  `json:"at_us"`
	Tool string `json:"tool"`
	// Args are the call's arguments as sent (the key argument included when the key is one).
	Args json.RawMessage `json:"args,omitempty"`
	Key  string          `json:"key"`
	// KeyCarrier says where the key travels: "arg idempotencyKey", "meta idempotencyKey",
	// "header Idempotency-Key".
	KeyCarrier string `json:"key_carrier"`
	// Mutating reports whether the tool was treated as mutating (it must carry a key).
	Mutating bool `json:"mutating"`
	// Outcome is what the agent could know: info when a fault hid the answer.
	Outcome  outcome.Outcome `json:"outcome"`
	Status   int             `json:"status,omitempty"`
	Replayed bool            `json:"replayed"`
	// Result is the server's answer (also when a fault kept it from the agent), or absent
	// when the server never answered.
	Result     json.RawMessage `json:"result,omitempty"`
	Error      string          `json:"error,omitempty"`
	DurationUS int64           `json:"duration_us"`
	// ResultTruncated and ArgsTruncated mark a result or arguments left out so that the line
	// stays within MaxLine (see Bound).
	ResultTruncated bool `json:"result_truncated,omitempty"`
	ArgsTruncated   bool `json:"args_truncated,omitempty"`
	// Fault is the fault injected on this call ("lose-response", "error:503"), "" for none.
	Fault string `json:"fault,omitempty"`
	// Scenario, Trial, Step and Endpoint say where a call of idemtest run came from: a run
	// writes the calls of every trial of every scenario into one trace, in the order they were
	// made. The proxy leaves them empty.
	Scenario string `json:"scenario,omitempty"`
	Trial    int    `json:"trial,omitempty"`
	Step     string `json:"step,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	// Instance is the instance of an endpoint of several that the call went to (DESIGN §11).
	Instance *endpoint.Instance `json:"instance,omitempty"`
	// TraceID is the W3C trace id the call carried in its traceparent (idemtest run): the
	// server's own trace of the call.
	TraceID string `json:"trace_id,omitempty"`
}

// Writer appends calls to a trace. It is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	h   Header
	err error
}

// NewWriter writes the header and returns a writer for the calls. A zero h.Started is now.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Version = Version
	if h.Started.IsZero() {
		h.Started = time.Now()
	}
	tw := &Writer{w: w, h: h}
	if err := tw.line(h); err != nil {
		return nil, fmt.Errorf("write trace header: %w", err)
	}
	return tw, nil
}

// Started is when the trace began.
func (w *Writer) Started() time.Time { return w.h.Started }

// Write appends one call. After a write error every later write returns it.
func (w *Writer) Write(c Call) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.line(c); err != nil {
		w.err = fmt.Errorf("write trace call %d: %w", c.Seq, err)
	}
	return w.err
}

// line writes v as one line, its string values escaped (safejson): a trace is read on terminals
// and in CI logs, and its calls carry what servers and agents sent.
func (w *Writer) line(v any) error {
	b, err := safejson.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.w.Write(append(b, '\n'))
	return err
}

// MaxLine bounds one line of a trace (a call with a large result): the most a writer of traces
// (run --trace, the proxy) may emit and the most a reader (sweep) accepts, so the two agree.
const MaxLine = 64 << 20

// Outcomes are the values a call's "outcome" may hold.
var Outcomes = []outcome.Outcome{outcome.OK, outcome.Fail, outcome.Info}

// PosError is a trace that cannot be read, at a line and column (both from 1).
type PosError struct {
	Line, Col int
	Msg       string
}

// Error reads "LINE:COL: MSG", to follow a file name and a colon.
func (e *PosError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

// readCall decodes line n as a call and checks the values that have a fixed set.
func readCall(n int, line []byte) (Call, error) {
	var c Call
	if err := json.Unmarshal(line, &c); err != nil {
		return c, jsonError(n, line, err)
	}
	if c.Outcome != "" && !slices.Contains(Outcomes, c.Outcome) {
		return c, &PosError{n, valueCol(line, "outcome"), fmt.Sprintf("unknown outcome %q (want ok, fail or info)", c.Outcome)}
	}
	if !validCarrier(c.KeyCarrier) {
		return c, &PosError{n, valueCol(line, "key_carrier"), fmt.Sprintf(`unknown key_carrier %q (want "arg NAME", "meta NAME", "header NAME", "none" or "")`, c.KeyCarrier)}
	}
	return c, nil
}

// validCarrier reports whether s says where a key travels as the writers write it.
func validCarrier(s string) bool {
	if s == "" || s == "none" {
		return true
	}
	kind, name, ok := strings.Cut(s, " ")
	return ok && name != "" && !strings.ContainsAny(name, " \t") && (kind == "arg" || kind == "meta" || kind == "header")
}

// jsonError places a decoding error of line n at its column.
func jsonError(n int, line []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return &PosError{n, max(int(se.Offset), 1), "invalid JSON: " + se.Error()}
	case errors.As(err, &te):
		col := max(int(te.Offset), 1)
		if te.Field != "" {
			col = valueCol(line, strings.Split(te.Field, ".")[0])
		}
		return &PosError{n, col, fmt.Sprintf("%s: want %s, got JSON %s", te.Field, te.Type, te.Value)}
	}
	return &PosError{n, 1, err.Error()}
}

// valueCol is the column of the value of the top-level field name in a JSON object line (1 when
// it is not there).
func valueCol(line []byte, name string) int {
	d := json.NewDecoder(bytes.NewReader(line))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return 1
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return 1
		}
		off := int(d.InputOffset())
		if k == name {
			for off < len(line) && (line[off] == ':' || line[off] == ' ' || line[off] == '\t') {
				off++
			}
			return off + 1
		}
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return 1
		}
	}
	return 1
}
