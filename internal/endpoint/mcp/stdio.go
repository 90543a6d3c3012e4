package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/proc"
)

// The MCP SDK's stdio client decodes each line of the server's stdout whole, up to 16 MiB, and
// ends the session at the first longer line: one oversized answer turned every later call into
// "not sent". stdioTransport reads the server's stdout through a lineCap instead: a message over
// max_response_bytes is discarded up to its newline (the stream stays in step), and when it is
// a response the call gets an error of its own (tooLargeCode), an info outcome, while the
// session carries on. At most one line of max_response_bytes is held at a time.

// stdioTransport starts an MCP server command and speaks to it over its stdin and stdout.
type stdioTransport struct {
	cmd   *exec.Cmd
	limit int64
	// grace is how long Close waits for the server to exit after closing its stdin.
	grace time.Duration
	// stderr is the write end of the server's standard error pipe, closed here once the server
	// has started (the server holds its own copy); nil when stderr is not piped.
	stderr io.Closer
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	err = t.cmd.Start()
	if t.stderr != nil {
		t.stderr.Close()
	}
	if err != nil {
		return nil, err
	}
	tr := &sdk.IOTransport{
		Reader:        readCloser{newLineCap(stdout, t.limit)},
		Writer:        &childStdin{WriteCloser: stdin, cmd: t.cmd, grace: t.grace},
		MaxLineLength: frameLimit(t.limit),
	}
	return tr.Connect(ctx)
}

// frameLimit bounds one message that the lineCap let through in pieces: spread over several
// lines, which MCP forbids. Past it the SDK ends the session (errFrameTooLarge).
func frameLimit(limit int64) int {
	return int(min(4*limit+1<<20, 1<<31-1))
}

// frameTooLarge reports whether err is the SDK's errFrameTooLarge (unexported).
func frameTooLarge(err error) bool {
	return err != nil && strings.Contains(err.Error(), "exceeded the configured maximum line length")
}

// readCloser closes nothing: the pipe is closed once the server has been waited for (not
// before: Wait would close it under the last answer of a server that then exits).
type readCloser struct{ io.Reader }

func (readCloser) Close() error { return nil }

// childStdin is the server's stdin; closing it ends the server as the MCP spec says: close its
// input, wait, then stop its process group.
type childStdin struct {
	io.WriteCloser
	cmd   *exec.Cmd
	grace time.Duration
}

func (c *childStdin) Close() error {
	err := c.WriteCloser.Close()
	exited := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(exited) }()
	t := time.NewTimer(c.grace)
	defer t.Stop()
	select {
	case <-exited:
		return err
	case <-t.C:
	}
	proc.Stop(c.cmd.Process.Pid, exited, c.grace)
	return err
}

// lineCap passes through the lines of r that hold at most limit bytes (the newline not
// counted). A longer line is dropped up to its newline; when it was a JSON-RPC response with an
// id, an error response for that id takes its place.
type lineCap struct {
	r     io.Reader
	limit int
	chunk []byte
	line  []byte // the current line so far, held back until its newline
	out   []byte // whole lines ready to be read
	over  bool   // the current line passed the limit and is being dropped
	scan  idScanner
	err   error
}

func newLineCap(r io.Reader, limit int64) *lineCap {
	return &lineCap{r: r, limit: int(min(limit, 1<<31-1)), chunk: make([]byte, 64<<10)}
}

func (l *lineCap) Read(p []byte) (int, error) {
	for len(l.out) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		n, err := l.r.Read(l.chunk)
		l.take(l.chunk[:n])
		if err != nil {
			if !l.over && len(l.line) > 0 {
				l.out, l.line = l.line, nil
			}
			l.err = err
		}
	}
	n := copy(p, l.out)
	l.out = l.out[n:]
	if len(l.out) == 0 {
		l.out = nil
	}
	return n, nil
}

// take sorts the bytes b into lines.
func (l *lineCap) take(b []byte) {
	for len(b) > 0 {
		part, ended := b, false
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			part, ended = b[:i+1], true
		}
		b = b[len(part):]
		size := len(l.line) + len(part)
		if ended {
			size--
		}
		switch {
		case l.over:
			l.scan.feed(part)
		case size > l.limit:
			l.over = true
			l.scan = idScanner{}
			l.scan.feed(l.line)
			l.scan.feed(part)
			l.line = l.line[:0] // kept for the next line: the next answer may be as long
		default:
			l.line = l.grow(len(part))
			l.line = append(l.line, part...)
		}
		if !ended {
			continue
		}
		if l.over {
			l.out = append(l.out, l.scan.errorResponse(l.limit)...)
			l.over = false
			continue
		}
		if len(l.out) == 0 {
			l.out, l.line = l.line, nil
		} else {
			l.out = append(l.out, l.line...)
			l.line = l.line[:0]
		}
	}
}

// grow makes room for n more bytes in the held line, doubling (append grows a large slice by a
// quarter, leaving four times the final size behind), and never past the longest line kept.
func (l *lineCap) grow(n int) []byte {
	if cap(l.line)-len(l.line) >= n {
		return l.line
	}
	c := min(max(2*cap(l.line), len(l.line)+n, 4<<10), l.limit+1)
	grown := make([]byte, len(l.line), max(c, len(l.line)+n))
	copy(grown, l.line)
	return grown
}

// idScanner reads a JSON object a byte at a time, keeping only its top-level "id" value and
// whether it has a top-level "method" (a request or notification, not a response).
type idScanner struct {
	depth    int
	inString bool
	escaped  bool
	isKey    bool // the string being read is a top-level key
	wantKey  bool // the next top-level string is a key
	key      []byte
	inID     bool // reading the top-level "id" value
	id       []byte
	method   bool
	tooLong  bool
}

func (s *idScanner) feed(b []byte) {
	for i := 0; i < len(b); i++ {
		if s.inString && !s.escaped && !s.isKey && !s.inID {
			// Inside a string that is neither a key nor the id (a long text): on to its end.
			j := bytes.IndexAny(b[i:], `"\`)
			if j < 0 {
				return
			}
			i += j
		}
		s.byte(b[i])
	}
}

func (s *idScanner) byte(c byte) {
	if s.inID && s.depth == 1 && !s.inString && (c == ',' || c == '}') {
		s.inID = false
	}
	if s.inID {
		if len(s.id) < 256 {
			s.id = append(s.id, c)
		} else {
			s.tooLong = true
		}
	}
	if s.inString {
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString = false
			if s.isKey {
				s.isKey = false
				s.wantKey = false
			}
			return
		}
		if s.isKey && len(s.key) < 16 {
			s.key = append(s.key, c)
		}
		return
	}
	switch c {
	case '"':
		s.inString = true
		if s.depth == 1 && s.wantKey {
			s.isKey, s.key = true, s.key[:0]
		}
	case '{', '[':
		s.depth++
		if s.depth == 1 {
			s.wantKey = true
		}
	case '}', ']':
		s.depth--
	case ':':
		if s.depth == 1 {
			s.inID = string(s.key) == "id"
			s.method = s.method || string(s.key) == "method"
		}
	case ',':
		if s.depth == 1 {
			s.wantKey = true
		}
	}
}

// errorResponse is the line that replaces a dropped response: a JSON-RPC error for its id, or
// nothing when it had no usable id or was not a response.
func (s *idScanner) errorResponse(limit int) []byte {
	id := bytes.TrimSpace(s.id)
	if s.method || s.tooLong || len(id) == 0 || !json.Valid(id) || bytes.Equal(id, []byte("null")) {
		return nil
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"answer larger than %d bytes"}}`+"\n", id, tooLargeCode, limit)
}
