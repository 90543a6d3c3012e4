package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/endpoint"
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

// Call is one tool call: what was sent, what the agent was told, and the fault injected.
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
	Outcome  endpoint.Outcome `json:"outcome"`
	Status   int              `json:"status,omitempty"`
	Replayed bool             `json:"replayed"`
	// Result is the server's answer (also when a fault kept it from the agent), or absent
	// when the server never answered.
	Result     json.RawMessage `json:"result,omitempty"`
	Error      string          `json:"error,omitempty"`
	DurationUS int64           `json:"duration_us"`
	// Fault is the fault injected on this call ("lose-response", "error:503"), "" for none.
	Fault string `json:"fault,omitempty"`
	// Scenario, Trial, Step and Endpoint say where a call of idemtest run came from: a run
	// writes the calls of every trial of every scenario into one trace, in the order they were
	// made. The proxy leaves them empty.
	Scenario string `json:"scenario,omitempty"`
	Trial    int    `json:"trial,omitempty"`
	Step     string `json:"step,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
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

func (w *Writer) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.w.Write(append(b, '\n'))
	return err
}

// ReadFile reads the trace in the file at path.
func ReadFile(path string) (Header, []Call, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, nil, err
	}
	defer f.Close()
	return Read(f)
}

// maxLine bounds one line of a trace (a call with a large result).
const maxLine = 64 << 20

// Read reads a whole trace. Errors name the line.
func Read(r io.Reader) (Header, []Call, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var h Header
	var calls []Call
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if n == 1 {
			var probe map[string]json.RawMessage
			if err := json.Unmarshal(line, &probe); err != nil {
				return h, nil, fmt.Errorf("trace line 1: %w", err)
			}
			if _, ok := probe["idemtest_trace"]; !ok {
				return h, nil, errors.New(`trace line 1: not an idemtest trace (no "idemtest_trace" header)`)
			}
			if err := json.Unmarshal(line, &h); err != nil {
				return h, nil, fmt.Errorf("trace line 1: %w", err)
			}
			if h.Version != Version {
				return h, nil, fmt.Errorf("trace line 1: version %d, this idemtest reads version %d", h.Version, Version)
			}
			continue
		}
		var c Call
		d := json.NewDecoder(bytes.NewReader(line))
		if err := d.Decode(&c); err != nil {
			return h, calls, fmt.Errorf("trace line %d: %w", n, err)
		}
		calls = append(calls, c)
	}
	if err := sc.Err(); err != nil {
		return h, calls, fmt.Errorf("read trace line %d: %w", n+1, err)
	}
	if n == 0 {
		return h, nil, errors.New("empty trace: no header")
	}
	return h, calls, nil
}
