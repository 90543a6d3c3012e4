package probe

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
)

// MaxRows bounds the rows a probe returns: the rows of an SQL or SQLite query, the lines of a
// JSON Lines file, the elements of a Redis reply, of a JSON document or answer that is a list.
// A probe that lists a whole table of a busy server is an error, not a reason to hold the
// machine's memory: count or filter in the query.
var MaxRows = 10000

// MaxBytes bounds the bytes a probe reads: an HTTP body, a file, the rows of a query (every
// value's bytes summed), a Redis reply, a call_tool answer.
var MaxBytes int64 = 64 << 20

// LimitError is a probe that went over MaxRows or MaxBytes.
type LimitError struct {
	// Rows is set when the rows went over MaxRows, otherwise the bytes went over MaxBytes.
	Rows  bool
	Limit int64
}

func (e *LimitError) Error() string {
	if e.Rows {
		return fmt.Sprintf("more than %d rows: a probe reads at most that (count or filter in the query)", e.Limit)
	}
	return fmt.Sprintf("over %d MiB: a probe reads at most that (count or filter in the query)", e.Limit>>20)
}

func tooManyRows() error     { return &LimitError{Rows: true, Limit: int64(MaxRows)} }
func tooManyBytes() error    { return &LimitError{Limit: MaxBytes} }
func isLimit(err error) bool { var le *LimitError; return errors.As(err, &le) }

// capValue holds a probe's value to the caps: a list (or a map, for Redis's HGETALL) of more
// than MaxRows entries is an error.
// It reads the top level's length only: it walks nothing.
func capValue(v any) error {
	n := 0
	if list, ok := v.([]any); ok {
		n = len(list)
	} else if m, ok := v.(map[string]any); ok {
		n = len(m)
	}
	if n > MaxRows {
		return tooManyRows()
	}
	return nil
}

// capAnswer holds a value read whole by someone else (a call_tool answer, decoded by the
// endpoint) to MaxBytes too, as its JSON.
func capAnswer(v any) error {
	if err := capValue(v); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err == nil && int64(len(b)) > MaxBytes {
		return tooManyBytes()
	}
	return nil
}

// cappedConn is a Redis connection that fails a reply over MaxBytes while it is read: each
// command starts with a write, which starts the count again. The client drops a connection a
// read failed on, so what is left of the reply is never read as the next one's.
type cappedConn struct {
	net.Conn
	read int64
}

func (c *cappedConn) Write(b []byte) (int, error) {
	c.read = 0
	return c.Conn.Write(b)
}

// Read reads at most one byte past MaxBytes, so that a reply over it is never complete and
// the read after fails.
func (c *cappedConn) Read(b []byte) (int, error) {
	left := MaxBytes + 1 - c.read
	if left <= 0 {
		return 0, tooManyBytes()
	}
	if int64(len(b)) > left {
		b = b[:left]
	}
	n, err := c.Conn.Read(b)
	c.read += int64(n)
	return n, err
}
