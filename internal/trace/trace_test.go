package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/outcome"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w, err := NewWriter(&buf, Header{Endpoint: "refundserver --stdio", Transport: "mcp-stdio", Started: start})
	if err != nil {
		t.Fatal(err)
	}
	want := []Call{
		{Seq: 1, AtUS: 10, Tool: "issue_refund", Args: json.RawMessage(`{"accountId":"a","idempotencyKey":"k1"}`), Key: "k1",
			KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: outcome.Info, Status: 0,
			Result: json.RawMessage(`{"refundId":"re_1"}`), DurationUS: 1500, Fault: "lose-response"},
		{Seq: 2, AtUS: 2000, Tool: "issue_refund", Args: json.RawMessage(`{"accountId":"a","idempotencyKey":"k1"}`), Key: "k1",
			KeyCarrier: "arg idempotencyKey", Mutating: true, Outcome: outcome.OK, Replayed: true,
			Result: json.RawMessage(`{"refundId":"re_1"}`), DurationUS: 900},
		{Seq: 3, Tool: "list_refunds", KeyCarrier: "arg idempotencyKey", Outcome: outcome.Fail, Error: "json-rpc error -32603: boom", Fault: "error:503", Status: 503},
	}
	for _, c := range want {
		if err := w.Write(c); err != nil {
			t.Fatal(err)
		}
	}
	first, _, _ := strings.Cut(buf.String(), "\n")
	if wantHeader := `{"idemtest_trace":1,"endpoint":"refundserver --stdio","transport":"mcp-stdio","started":"2026-01-02T03:04:05Z"}`; first != wantHeader {
		t.Errorf("header line\n got %s\nwant %s", first, wantHeader)
	}
	h, got, err := Read(context.Background(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != Version || h.Endpoint != "refundserver --stdio" || !h.Started.Equal(start) {
		t.Errorf("header = %+v", h)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("calls\n got %+v\nwant %+v", got, want)
	}
}

func TestReadErrors(t *testing.T) {
	hdr := `{"idemtest_trace":1,"endpoint":"x"}` + "\n"
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "empty trace"},
		{"not a trace", `{"hello":1}` + "\n", "not an idemtest trace"},
		{"not JSON", "hello\n", "1:1: invalid JSON"},
		{"future version", `{"idemtest_trace":2,"endpoint":"x"}` + "\n", "version 2, this idemtest reads version 1"},
		{"bad call", `{"idemtest_trace":1,"endpoint":"x"}` + "\n" + `{"seq":1}` + "\n" + `{"seq":"two"}` + "\n", "3:8: seq: want int, got JSON string"},
		{"cut short", hdr + `{"seq":1,"tool":"t",` + "\n", "2:20: invalid JSON: unexpected end of JSON input"},
		{"unknown outcome", hdr + `{"seq":1, "outcome": "weird"}` + "\n", `2:22: unknown outcome "weird" (want ok, fail or info)`},
		{"unknown carrier", hdr + `{"seq":1,"key_carrier":"carrier pigeon"}` + "\n", `2:24: unknown key_carrier "carrier pigeon" (want "arg NAME", "meta NAME", "header NAME", "none" or "")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Read(context.Background(), strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestConcurrentWritesStayWholeLines(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Endpoint: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.Write(Call{Seq: i + 1, Tool: "t", Key: fmt.Sprint("k", i), Outcome: outcome.OK})
		}()
	}
	wg.Wait()
	_, calls, err := Read(context.Background(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 50 {
		t.Errorf("read %d calls, want 50", len(calls))
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	if f.n > 1 {
		return 0, fmt.Errorf("disk full")
	}
	return len(p), nil
}

func TestWriteErrorSticks(t *testing.T) {
	w, err := NewWriter(&failWriter{}, Header{Endpoint: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Call{Seq: 1}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
	if err := w.Write(Call{Seq: 2}); err == nil || !strings.Contains(err.Error(), "call 1") {
		t.Errorf("second write err = %v, want the first error again", err)
	}
}

func TestHeaderMCPServer(t *testing.T) {
	for _, tc := range []struct {
		h            Header
		command, url string
		ok           bool
	}{
		{Header{Endpoint: "node server.js", Transport: MCPStdio}, "node server.js", "", true},
		{Header{Endpoint: "http://127.0.0.1:3000/mcp", Transport: MCPHTTP}, "", "http://127.0.0.1:3000/mcp", true},
		{Header{Endpoint: "http://127.0.0.1:8080", Transport: HTTP}, "", "", false},
		{Header{Endpoint: "refunds,payments"}, "", "", false}, // a run's trace
	} {
		command, url, ok := tc.h.MCPServer()
		if command != tc.command || url != tc.url || ok != tc.ok {
			t.Errorf("%+v: MCPServer() = %q, %q, %v", tc.h, command, url, ok)
		}
	}
}
