package proc

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	tests := []struct {
		name    string
		limit   int
		writes  []string
		watch   string
		want    string
		matched bool
	}{
		{name: "keeps everything under the limit", limit: 16, writes: []string{"ab", "cd\n"}, want: "abcd\n"},
		{name: "keeps the last bytes", limit: 4, writes: []string{"abc", "def", "g"}, want: "defg"},
		{name: "one write larger than the limit", limit: 4, writes: []string{"abcdefgh"}, want: "efgh"},
		{name: "a line split across writes matches", limit: 64, writes: []string{"listen", "ing on 80\nnext"}, watch: `^listening on \d+$`, want: "listening on 80\nnext", matched: true},
		{name: "the line being written matches", limit: 64, writes: []string{"x\nready>"}, watch: `^ready>$`, want: "x\nready>", matched: true},
		{name: "a match is remembered after it scrolled out", limit: 8, writes: []string{"ready\n", strings.Repeat("z", 100)}, watch: `^ready$`, want: "zzzzzzzz", matched: true},
		{name: "no match", limit: 64, writes: []string{"starting\n", "still starting\n"}, watch: `^ready$`, want: "starting\nstill starting\n"},
		{name: "an over-long line is cut, not matched past the cut", limit: 8, writes: []string{strings.Repeat("a", 20) + "ready\n"}, watch: `ready`, want: "aaready\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := NewTail(tt.limit)
			if tt.watch != "" {
				tl.Watch(regexp.MustCompile(tt.watch))
			}
			for _, w := range tt.writes {
				if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := tl.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := tl.Matched(); got != tt.matched {
				t.Errorf("Matched() = %v, want %v", got, tt.matched)
			}
		})
	}
}

// TestTailBounded writes 64 MiB without a newline: what the Tail holds stays within its limit.
func TestTailBounded(t *testing.T) {
	tl := NewTail(1 << 10)
	tl.Watch(regexp.MustCompile(`never`))
	chunk := bytes.Repeat([]byte{'x'}, 32<<10)
	for i := 0; i < 2048; i++ {
		tl.Write(chunk)
	}
	if c := cap(tl.buf); c > 4<<10 {
		t.Errorf("buffer capacity %d after 64 MiB, want it bounded near the 1 KiB limit", c)
	}
	if c := cap(tl.line); c > 4<<10 {
		t.Errorf("line capacity %d after 64 MiB without a newline, want it bounded", c)
	}
	if tl.Matched() {
		t.Error("matched a pattern that was never written")
	}
}

// TestTailSince: what was written after a mark, and all that is kept when more was written
// since than the Tail keeps.
func TestTailSince(t *testing.T) {
	tl := NewTail(16)
	tl.Write([]byte("before\n"))
	m := tl.Mark()
	if got := tl.Since(m); got != "" {
		t.Errorf("nothing written since the mark: got %q", got)
	}
	tl.Write([]byte("during\n"))
	if got := tl.Since(m); got != "during\n" {
		t.Errorf("since the mark: got %q", got)
	}
	tl.Write([]byte("a long line past the limit\n"))
	if got := tl.Since(m); got != tl.String() || len(got) != 16 {
		t.Errorf("more than kept since the mark: got %q, kept %q", got, tl.String())
	}
}

// TestLastBytes: a cut output starts at a line's start, so a report never shows half a line.
func TestLastBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short enough", "one\ntwo\n", 8, "one\ntwo\n"},
		{"cut at a line", "first line\nsecond\nthird\n", 13, "third\n"},
		{"one long line", "abcdefghij", 4, "ghij"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LastBytes(tc.in, tc.n); got != tc.want {
				t.Errorf("LastBytes(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}
