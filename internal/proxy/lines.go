package proxy

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/idemtest/idemtest/internal/endpoint/mcp"
)

// MaxLine bounds one JSON-RPC message on stdio (the newline not counted), in either direction.
// A longer line is never held whole: the proxy reads it through to its newline as it comes,
// keeping only its id, and drops it with a note (see lineReader).
const MaxLine = 64 << 20

// chunk is how much of a line the proxy reads at a time.
const chunk = 64 << 10

// lineReader reads newline-delimited messages of at most max bytes each. A longer line is read
// through to its newline a chunk at a time and discarded as it is read, its top-level JSON-RPC
// id noted on the way (an agent's request or a server's answer may put it last): at most one
// line of max bytes is held at a time, whatever the peer sends.
type lineReader struct {
	br  *bufio.Reader
	max int
	err error
}

// dropped is a line over the cap: how long it was and, when it told, its JSON-RPC id and
// whether it was a request (it had a method).
type dropped struct {
	size    int64
	id      json.RawMessage
	request bool
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, chunk), max: max}
}

// next returns the next line with its newline (added when the stream ended without one), or
// the drop of a line over the cap; err is set (io.EOF at the end of the stream) when neither
// is left.
func (l *lineReader) next() (line []byte, drop *dropped, err error) {
	if l.err != nil {
		return nil, nil, l.err
	}
	var scan *mcp.IDScanner
	var size int64
	for {
		frag, err := l.br.ReadSlice('\n')
		size += int64(len(frag))
		content := size
		if len(frag) > 0 && frag[len(frag)-1] == '\n' {
			content--
		}
		switch {
		case scan != nil:
			scan.Feed(frag)
		case content > int64(l.max):
			scan = &mcp.IDScanner{}
			scan.Feed(line)
			scan.Feed(frag)
			line = nil
		default:
			line = grow(line, len(frag), l.max+1)
			line = append(line, frag...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			l.err = err
		}
		switch {
		case scan != nil:
			d := &dropped{size: content}
			d.id, d.request = scan.ID()
			return nil, d, nil
		case len(line) > 0:
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			return line, nil, nil
		case err != nil:
			return nil, nil, err
		}
	}
}

// grow makes room for n more bytes in b, doubling (append grows a large slice by a quarter and
// leaves four times the final size behind) but never past limit unless n needs it.
func grow(b []byte, n, limit int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	c := max(min(max(2*cap(b), 4<<10), limit), len(b)+n)
	grown := make([]byte, len(b), c)
	copy(grown, b)
	return grown
}

// readLines calls line with each newline-terminated line of r (the newline kept, added if the
// stream ended without one) and drop with each line over max, until r ends.
func readLines(r io.Reader, max int, line func([]byte), drop func(dropped)) {
	lr := newLineReader(r, max)
	for {
		b, d, err := lr.next()
		switch {
		case err != nil:
			return
		case d != nil:
			drop(*d)
		default:
			line(b)
		}
	}
}

// sizeText spells a byte count for a note: "200 MiB", "70000 bytes".
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
