package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/regularfile"
	"github.com/idemtest/idemtest/internal/reportfile"
	"github.com/idemtest/idemtest/internal/trace"
)

// MaxLine bounds one line of input: one ExportTraceServiceRequest of the Collector's file
// exporter (a batch of spans), or one call of an idemtest trace.
const MaxLine = trace.MaxLine

// InputError is input the audit cannot read, at a file and line (and column when known).
type InputError struct {
	Path      string
	Line, Col int
	Msg       string
}

func (e *InputError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.Path, e.Msg)
	}
	if e.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.Path, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
}

// ReadFile reads path ("-" is standard input, named stdin in errors and findings; gzip is recognised by its magic bytes) and hands
// each tool call in it to add, as it is read. The file is OTLP JSON, one
// ExportTraceServiceRequest per line as the Collector's file exporter writes it, or an idemtest
// trace (its first line is the idemtest_trace header). Bad input is an *InputError; reading
// stops with ctx's error when ctx is done.
func ReadFile(ctx context.Context, path string, m Mapping, add func(Call) error) error {
	var r io.Reader
	if path == "-" {
		r, path = os.Stdin, "stdin"
	} else {
		f, _, err := regularfile.Open(path)
		if err != nil {
			return &InputError{Path: path, Msg: reportfile.UnwrapPath(err).Error()}
		}
		defer f.Close()
		r = f
	}
	return Read(ctx, path, r, m, add)
}

// Read is ReadFile on a reader; name is what errors call it.
func Read(ctx context.Context, name string, r io.Reader, m Mapping, add func(Call) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return &InputError{Path: name, Line: 1, Msg: "gzip: " + err.Error()}
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	if isTrace(br) {
		return readTrace(ctx, name, br, add)
	}
	return readOTLP(ctx, name, br, m.withDefaults(), add)
}

// isTrace reports whether the input starts with an idemtest trace header.
func isTrace(br *bufio.Reader) bool {
	head, _ := br.Peek(4 << 10)
	head = bytes.TrimLeft(head, " \t\r\n")
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	return bytes.Contains(head, []byte(`"idemtest_trace"`))
}

// readOTLP reads OTLP JSON lines, at most MaxLine bytes each.
func readOTLP(ctx context.Context, name string, br *bufio.Reader, m Mapping, add func(Call) error) error {
	var buf []byte
	ex := newExecIndex(m)
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		buf = buf[:0]
		var rerr error
		for {
			chunk, err := br.ReadSlice('\n')
			if len(buf)+len(chunk) > MaxLine+1 {
				return &InputError{Path: name, Line: n, Msg: fmt.Sprintf("line is over %d MiB: one line holds one ExportTraceServiceRequest; export smaller batches", MaxLine>>20)}
			}
			buf = append(buf, chunk...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			rerr = err
			break
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return &InputError{Path: name, Line: n, Msg: "read: " + rerr.Error()}
		}
		if line := bytes.TrimSpace(buf); len(line) > 0 {
			req, err := unmarshalOTLP(line)
			if err != nil {
				return &InputError{Path: name, Line: n, Col: protoCol(err), Msg: "not an OTLP JSON ExportTraceServiceRequest: " + err.Error()}
			}
			if err := addRequest(req, name+":"+strconv.Itoa(n), m, ex, add); err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
	}
}

// maxPendingExecutions bounds the execution spans remembered until their parent call comes.
const maxPendingExecutions = 1 << 20

// execIndex counts the execution spans (Mapping.ExecutionSpan) of each parent span until the
// parent arrives. A child span ends before its parent, so an SDK's batches and the Collector's
// file export it in the same request or an earlier one.
type execIndex struct {
	pattern string
	pending map[string]int
}

func newExecIndex(m Mapping) *execIndex {
	if m.ExecutionSpan == "" {
		return nil
	}
	return &execIndex{pattern: m.ExecutionSpan, pending: map[string]int{}}
}

// CheckExecutionSpan reports a malformed --execution-span glob.
func CheckExecutionSpan(pattern string) error {
	if _, err := path.Match(pattern, ""); err != nil {
		return fmt.Errorf("--execution-span %q: %w", pattern, err)
	}
	return nil
}

// addRequest hands each tool call of one export request to add; where names the request.
func addRequest(req *coltracepb.ExportTraceServiceRequest, where string, m Mapping, ex *execIndex, add func(Call) error) error {
	if ex != nil {
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					if ok, _ := path.Match(ex.pattern, sp.GetName()); !ok || len(sp.GetParentSpanId()) == 0 ||
						sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR {
						continue
					}
					if len(ex.pending) >= maxPendingExecutions {
						clear(ex.pending) // parents that never came: forget them rather than grow
					}
					ex.pending[string(sp.GetParentSpanId())]++
				}
			}
		}
	}
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				c, ok := spanCall(sp, m)
				if !ok {
					continue
				}
				c.Where = where
				if ex != nil {
					c.ExecKnown = true
					c.Executions = ex.pending[string(sp.GetSpanId())]
					delete(ex.pending, string(sp.GetSpanId()))
				}
				if err := add(c); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// readTrace reads an idemtest trace: its calls are one session (a run's, one per scenario
// trial), timed from the header's start.
func readTrace(ctx context.Context, name string, br *bufio.Reader, add func(Call) error) error {
	var started time.Time
	err := trace.Scan(ctx, br, func(h trace.Header) error {
		started = h.Started
		return nil
	}, func(line int, tc trace.Call) error {
		c := Call{Call: tc, Session: name, Start: started.Add(time.Duration(tc.AtUS) * time.Microsecond).UTC(), TraceID: tc.TraceID,
			Where: name + ":" + strconv.Itoa(line), Conflict: tc.Status == 409, ArgsKnown: !tc.ArgsTruncated}
		if tc.Scenario != "" {
			c.Session = fmt.Sprintf("%s#%s/%d", name, tc.Scenario, tc.Trial)
		}
		if c.Conflict {
			c.Outcome = outcome.Fail
		}
		if c.Fault != "" && !strings.HasPrefix(c.Fault, "delay:") {
			// The agent did not see the answer; the server's own outcome is what executed.
			c.Hidden = true
			if len(c.Result) > 0 {
				c.Outcome = outcome.OK
				if c.Status != 0 {
					c.Outcome, _ = endpoint.ClassifyStatus(c.Status)
				}
			}
		}
		return add(c)
	})
	var pe *trace.PosError
	if errors.As(err, &pe) {
		return &InputError{Path: name, Line: pe.Line, Col: pe.Col, Msg: pe.Msg}
	}
	return err
}

// protoColRE finds the position protojson gives in its errors: "(line 1:19)".
var protoColRE = regexp.MustCompile(`\(line 1:(\d+)\)`)

// protoCol is the column a protojson error names, 0 when it names none.
func protoCol(err error) int {
	m := protoColRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
