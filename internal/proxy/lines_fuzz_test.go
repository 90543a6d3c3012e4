package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzLineReader checks the proxy's line reader against the plain split of its input: each
// line up to the cap comes back whole, with its newline; each longer one is reported dropped
// with its length, never returned; nothing is lost or invented; the stream ends once.
func FuzzLineReader(f *testing.F) {
	for _, seed := range []string{
		"", "\n", "a\nb\n", "no newline at the end", "\n\n\n",
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"` + string(bytes.Repeat([]byte("y"), 80)) + `"}}` + "\n{\"id\":1}\n",
		`{"result":{"text":"` + string(bytes.Repeat([]byte("z"), 80)) + `"},"jsonrpc":"2.0","id":"abc"}`,
		"short\n" + string(bytes.Repeat([]byte("w"), 100)) + "\nshort again",
	} {
		f.Add([]byte(seed), uint8(16))
		f.Add([]byte(seed), uint8(40))
	}
	f.Fuzz(func(t *testing.T, in []byte, max8 uint8) {
		max := int(max8)
		// The smallest buffer bufio allows, so that lines arrive in fragments.
		lr := &lineReader{br: bufio.NewReaderSize(iotestHalf{bytes.NewReader(in)}, 16), max: max}
		want := bytes.SplitAfter(in, []byte("\n"))
		if len(want[len(want)-1]) == 0 {
			want = want[:len(want)-1]
		}
		for i, w := range want {
			line, d, err := lr.next()
			if err != nil {
				t.Fatalf("line %d: stream ended (%v), want %q", i, err, w)
			}
			content := len(bytes.TrimSuffix(w, []byte("\n")))
			if content > max {
				if d == nil || line != nil || d.size != int64(content) {
					t.Fatalf("line %d of %d bytes over a cap of %d: got line %q, drop %+v", i, content, max, line, d)
				}
				continue
			}
			wantLine := w
			if !bytes.HasSuffix(w, []byte("\n")) {
				wantLine = append(bytes.Clone(w), '\n')
			}
			if d != nil || !bytes.Equal(line, wantLine) {
				t.Fatalf("line %d: got %q (drop %+v), want %q", i, line, d, wantLine)
			}
			// Held in at most the cap (plus the newline added at the end of the stream).
			if cap(line) > 2*(max+2) && cap(line) > 4<<10 {
				t.Fatalf("line %d of %d bytes held in %d bytes over a cap of %d", i, len(line), cap(line), max)
			}
		}
		for range 2 {
			if line, d, err := lr.next(); !errors.Is(err, io.EOF) || line != nil || d != nil {
				t.Fatalf("after the last line: %q %+v %v, want io.EOF", line, d, err)
			}
		}
	})
}

// iotestHalf reads at most half of what is asked (and at least a byte), as a pipe may.
type iotestHalf struct{ r io.Reader }

func (h iotestHalf) Read(p []byte) (int, error) {
	return h.r.Read(p[:max(1, (len(p)+1)/2)])
}
