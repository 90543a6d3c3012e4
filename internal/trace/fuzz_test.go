package trace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzRead feeds the reader arbitrary bytes: a trace is data from elsewhere. It must never
// panic, every error must be a *PosError at a line the input has, and a bound much smaller than
// MaxLine must be kept (a line over it refused, naming it). Seeded from the recorded session in
// bench/ and short variants.
//
//	go test -run '^$' -fuzz FuzzRead -fuzztime 60s ./internal/trace
func FuzzRead(f *testing.F) {
	if b, err := os.ReadFile("../../bench/sweep10.jsonl"); err == nil {
		f.Add(b)
		lines := bytes.SplitAfter(b, []byte("\n"))
		f.Add(bytes.Join(lines[:3], nil))
	}
	f.Add([]byte(testHeader + "\n" + `{"seq":1,"tool":"t","args":{"a":[1,{"b":"c"}]},"outcome":"info","key_carrier":"arg k"}` + "\n"))
	f.Add([]byte("\n\n" + testHeader + "\r\n{}\n"))
	f.Add([]byte(`{"idemtest_trace":2}`))
	f.Add([]byte(testHeader + "\n" + `{"seq":"x"}`))
	const small = 256
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, limit := range []int{MaxLine, small} {
			_, calls, err := read(context.Background(), bytes.NewReader(data), limit)
			if err == nil {
				if limit == small {
					for i, l := range bytes.Split(data, []byte("\n")) {
						if len(l) > small {
							t.Fatalf("line %d has %d bytes, over the bound %d, and was read", i+1, len(l), small)
						}
					}
				}
				if len(calls) > lines {
					t.Fatalf("%d calls from %d lines", len(calls), lines)
				}
				continue
			}
			var pe *PosError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is no *PosError", err, err)
			}
			if pe.Line < 1 || pe.Line > lines || pe.Col < 1 {
				t.Fatalf("error at %d:%d, input has %d lines: %v", pe.Line, pe.Col, lines, err)
			}
			if strings.Contains(pe.Msg, "is over") {
				if l := bytes.Split(data, []byte("\n"))[pe.Line-1]; len(l) <= limit {
					t.Fatalf("line %d (%d bytes) refused as over %d", pe.Line, len(l), limit)
				}
			}
		}
	})
}
