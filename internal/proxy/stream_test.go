package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/trace"
)

// lines is the seqs of the trace lines written to buf so far, and whether each is mutating.
func lines(t *testing.T, buf *bytes.Buffer) (seqs []int, mutating []bool) {
	t.Helper()
	_, calls, err := trace.Read(context.Background(), bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		seqs, mutating = append(seqs, c.Seq), append(mutating, c.Mutating)
	}
	return seqs, mutating
}

func streamingRecorder(t *testing.T, opts Options) (*Recorder, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	tw, err := trace.NewWriter(&buf, trace.Header{Transport: trace.MCPStdio})
	if err != nil {
		t.Fatal(err)
	}
	opts.Trace = tw
	opts.Key = scenario.KeySpec{Arg: "idempotencyKey"}
	return NewRecorder(opts), &buf
}

func ok() Answer { return Answer{Outcome: outcome.OK, Result: json.RawMessage(`{"refundId":"re_1"}`)} }

// A call reaches the trace when it completes, not when the session ends; a call that
// completes before one the agent sent earlier waits for it, so the lines stay in the agent's
// order.
func TestRecorderStreamsCallsInTheAgentsOrder(t *testing.T) {
	r, buf := streamingRecorder(t, Options{Mutating: []string{"issue_refund"}})
	p1 := r.Begin("issue_refund", json.RawMessage(`{"idempotencyKey":"a"}`), "a")
	r.Finish(p1, ok())
	if seqs, _ := lines(t, buf); fmt.Sprint(seqs) != "[1]" {
		t.Fatalf("after call 1 completed the trace holds %v, want [1]", seqs)
	}
	p2 := r.Begin("issue_refund", json.RawMessage(`{"idempotencyKey":"b"}`), "b")
	p3 := r.Begin("issue_refund", json.RawMessage(`{"idempotencyKey":"c"}`), "c")
	r.Finish(p3, ok())
	if seqs, _ := lines(t, buf); fmt.Sprint(seqs) != "[1]" {
		t.Fatalf("call 3 completed before call 2: the trace holds %v, want [1] until call 2 completes", seqs)
	}
	r.Finish(p2, ok())
	if seqs, _ := lines(t, buf); fmt.Sprint(seqs) != "[1 2 3]" {
		t.Fatalf("after call 2 completed the trace holds %v, want [1 2 3]", seqs)
	}
	calls, err := r.Close()
	if err != nil || calls.Len() != 3 {
		t.Fatalf("Close: %d calls, %v", calls.Len(), err)
	}
}

// A call that stays open holds back at most maxHeld later lines: past them the earliest are
// written, and on Close the open call is written before the lines still held.
func TestRecorderHoldsBackABoundedNumberOfLines(t *testing.T) {
	r, buf := streamingRecorder(t, Options{Mutating: []string{"issue_refund"}})
	r.Begin("issue_refund", json.RawMessage(`{"idempotencyKey":"open"}`), "open")
	for i := range maxHeld + 10 {
		k := fmt.Sprint("k", i)
		r.Finish(r.Begin("issue_refund", json.RawMessage(`{"idempotencyKey":"`+k+`"}`), k), ok())
	}
	seqs, _ := lines(t, buf)
	if len(seqs) != 10 || seqs[0] != 2 {
		t.Fatalf("with call 1 open the trace holds %d lines from %v, want the 10 earliest past %d held", len(seqs), seqs[:min(len(seqs), 3)], maxHeld)
	}
	if _, err := r.Close(); err != nil {
		t.Fatal(err)
	}
	seqs, _ = lines(t, buf)
	if len(seqs) != maxHeld+11 || seqs[10] != 1 || seqs[11] != 12 || seqs[len(seqs)-1] != maxHeld+11 {
		t.Fatalf("after Close the trace holds %d lines, the 11th %d, want %d with the open call 1 11th", len(seqs), seqs[10], maxHeld+11)
	}
}

// While a tools/list is in flight, completed calls wait for its answer: it decides whether
// their tools are mutating, as the trace line says.
func TestRecorderWaitsForToolsListBeforeTracing(t *testing.T) {
	r, buf := streamingRecorder(t, Options{})
	r.SetListing(1, 1)
	r.Finish(r.Begin("list_refunds", json.RawMessage(`{}`), ""), ok())
	if seqs, _ := lines(t, buf); len(seqs) != 0 {
		t.Fatalf("a call was traced while tools/list was in flight: %v", seqs)
	}
	r.SeeTools(map[string]bool{"list_refunds": true})
	r.SetListing(0, 5) // an older report is ignored
	if seqs, _ := lines(t, buf); len(seqs) != 0 {
		t.Fatalf("an older listing report released the line: %v", seqs)
	}
	r.SetListing(2, 0)
	if seqs, mutating := lines(t, buf); fmt.Sprint(seqs, mutating) != "[1] [false]" {
		t.Fatalf("after the tools/list answer the trace holds %v %v, want call 1 read-only", seqs, mutating)
	}
}

// The recorder lets each answer go once the call is traced: a session's memory does not grow
// with what its calls carried (200 answers of 256 KiB each, 50 MiB in all).
func TestRecorderKeepsNoAnswers(t *testing.T) {
	tw, err := trace.NewWriter(io.Discard, trace.Header{Transport: trace.MCPStdio})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRecorder(Options{Trace: tw, Key: scenario.KeySpec{Arg: "idempotencyKey"}, Mutating: []string{"issue_refund"}})
	big := `{"blob":"` + strings.Repeat("x", 256<<10) + `"}`
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 200 {
		k := fmt.Sprint("k", i)
		p := r.Begin("issue_refund", json.RawMessage(`{"idempotencyKey":"`+k+`","note":"`+strings.Repeat("y", 1000)+`"}`), k)
		r.Finish(p, Answer{Outcome: outcome.OK, Result: json.RawMessage(big)})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 4<<20 {
		t.Errorf("200 calls with 256 KiB answers left %d KiB on the heap; want the answers let go (under 4 MiB)", grown>>10)
	}
	calls, err := r.Close()
	if err != nil || calls.Len() != 200 {
		t.Fatalf("Close: %d calls, %v", calls.Len(), err)
	}
}
