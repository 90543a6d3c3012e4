package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestBoundKeepsEveryLineWithinMaxLine(t *testing.T) {
	if testing.Short() {
		t.Skip("writes lines of 70 MiB")
	}
	// '<' is written \u003c: 12 MiB of it is a 72 MiB line.
	escaped, _ := json.Marshal(map[string]string{"text": strings.Repeat("<", 12<<20)})
	big, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 70<<20)})
	small := json.RawMessage(`{"refundId":"re_1"}`)
	for _, tc := range []struct {
		name                 string
		c                    Call
		result, args, errCut bool
	}{
		{name: "small call unchanged", c: Call{Seq: 1, Tool: "t", Args: small, Result: small}},
		{name: "escaping makes the result too long", c: Call{Seq: 2, Tool: "t", Args: small, Result: escaped}, result: true},
		{name: "huge result", c: Call{Seq: 3, Tool: "t", Args: small, Result: big}, result: true},
		{name: "huge arguments", c: Call{Seq: 4, Tool: "t", Args: big, Result: small}, result: true, args: true},
		{name: "huge error", c: Call{Seq: 5, Tool: "t", Error: strings.Repeat("é", 33<<20)}, errCut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, Header{Endpoint: "e"})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(Bound(tc.c)); err != nil {
				t.Fatal(err)
			}
			_, calls, err := Read(context.Background(), &buf)
			if err != nil || len(calls) != 1 {
				t.Fatalf("read back: %d calls, %v", len(calls), err)
			}
			got := calls[0]
			if got.ResultTruncated != tc.result || got.ArgsTruncated != tc.args || (len(got.Result) == 0) != (tc.result || len(tc.c.Result) == 0) {
				t.Errorf("result_truncated %v args_truncated %v (result %d bytes), want %v %v", got.ResultTruncated, got.ArgsTruncated, len(got.Result), tc.result, tc.args)
			}
			if cut := got.Error != tc.c.Error; cut != tc.errCut || cut && !strings.HasSuffix(got.Error, "…(cut)") {
				t.Errorf("error of %d bytes read back as %d bytes", len(tc.c.Error), len(got.Error))
			}
			if !tc.result && !tc.args && !tc.errCut && (string(got.Args) != string(tc.c.Args) || string(got.Result) != string(tc.c.Result)) {
				t.Errorf("a call that fits was changed: %+v", got)
			}
		})
	}
}
