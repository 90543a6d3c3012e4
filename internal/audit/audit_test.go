package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/trace"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

// call builds a keyed call of refund with arguments args (the key included as idempotencyKey).
func call(at time.Duration, session, key, args, result string, o outcome.Outcome) Call {
	c := Call{Session: session, Start: t0.Add(at), TraceID: strings.Repeat("a", 32), SpanID: strings.Repeat("b", 16), Where: "f:1", ArgsKnown: true}
	c.Tool, c.Outcome = "refund", o
	var m map[string]any
	_ = json.Unmarshal([]byte(args), &m)
	if key != "" {
		m["idempotencyKey"] = key
		c.Key, c.KeyCarrier = key, "arg idempotencyKey"
	}
	c.Args, _ = json.Marshal(m)
	if result != "" {
		c.Result = json.RawMessage(result)
	}
	return c
}

func replayed(c Call) Call { c.Replayed = true; return c }
func conflict(c Call) Call { c.Conflict, c.Outcome, c.Status = true, outcome.Fail, 409; return c }

func TestAuditFindings(t *testing.T) {
	ok, fail, info := outcome.OK, outcome.Fail, outcome.Info
	tests := []struct {
		name  string
		opts  Options
		calls []Call
		want  map[Kind]int
	}{
		{"one key two executions", Options{}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), call(time.Second, "s", "k1", `{"a":1}`, `{"id":2}`, ok)},
			map[Kind]int{DoubleExecution: 1}},
		{"a tool idempotent by nature executed twice", Options{Natural: []string{"refund"}}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), call(time.Second, "s", "k1", `{"a":1}`, `{"id":2}`, ok)},
			nil},
		{"another tool named natural leaves refund judged", Options{Natural: []string{"set_status"}}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), call(time.Second, "s", "k1", `{"a":1}`, `{"id":2}`, ok)},
			map[Kind]int{DoubleExecution: 1}},
		{"marked replay is no execution", Options{}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), replayed(call(time.Second, "s", "k1", `{"a":1}`, `{"id":1}`, ok))},
			nil},
		{"an answer equal to the first is a replay", Options{}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), call(time.Second, "s", "k1", `{"a":1}`, `{"id": 1}`, ok)},
			nil},
		{"a refusal is no execution", Options{}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), call(time.Second, "s", "k1", `{"a":1}`, `{"status":"error"}`, fail)},
			nil},
		{"timed-out call retried under a fresh key", Options{}, []Call{
			call(0, "s", "k1", `{"a":1}`, "", info), call(time.Second, "s", "k2", `{"a":1}`, `{"id":1}`, ok)},
			map[Kind]int{FreshKeyRetry: 1}},
		{"fresh-key retry read in reverse order", Options{}, []Call{
			call(time.Second, "s", "k2", `{"a":1}`, `{"id":1}`, ok), call(0, "s", "k1", `{"a":1}`, "", info)},
			map[Kind]int{FreshKeyRetry: 1}},
		{"retry under the same key", Options{}, []Call{
			call(0, "s", "k1", `{"a":1}`, "", info), call(time.Second, "s", "k1", `{"a":1}`, `{"id":1}`, ok)},
			nil},
		{"a new key after a success is a new call", Options{}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), call(time.Second, "s", "k2", `{"a":1}`, `{"id":2}`, ok)},
			nil},
		{"other arguments are another call", Options{}, []Call{
			call(0, "s", "k1", `{"a":1}`, "", info), call(time.Second, "s", "k2", `{"a":2}`, `{"id":1}`, ok)},
			nil},
		{"another session is another caller", Options{}, []Call{
			call(0, "s1", "k1", `{"a":1}`, "", info), call(time.Second, "s2", "k2", `{"a":1}`, `{"id":1}`, ok)},
			nil},
		{"keyless call of a tool that takes keys", Options{}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), call(time.Second, "s", "", `{"a":2}`, `{"id":2}`, ok)},
			map[Kind]int{KeylessMutating: 1}},
		{"keyless calls of a read-only tool", Options{}, []Call{
			call(0, "s", "", `{"a":1}`, `{"id":1}`, ok), call(time.Second, "s", "", `{"a":2}`, `{"id":2}`, ok)},
			nil},
		{"keyless calls of a tool named mutating", Options{Mutating: []string{"refund"}}, []Call{
			call(0, "s", "", `{"a":1}`, `{"id":1}`, ok)},
			map[Kind]int{KeylessMutating: 1}},
		{"one key two sessions", Options{}, []Call{
			call(0, "s1", "k1", `{"a":1}`, `{"id":1}`, ok), replayed(call(time.Second, "s2", "k1", `{"a":1}`, `{"id":1}`, ok))},
			map[Kind]int{KeySharedSessions: 1}},
		{"one key two argument sets", Options{}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), call(time.Second, "s", "k1", `{"a":2}`, `{"status":"error"}`, fail)},
			map[Kind]int{KeySharedArgs: 1}},
		{"executed again after the key's lifetime", Options{TTL: time.Hour}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), call(2*time.Hour, "s", "k1", `{"a":1}`, `{"id":2}`, ok)},
			map[Kind]int{ExpiryCollision: 1}},
		{"executed again within the key's lifetime", Options{TTL: 3 * time.Hour}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), call(2*time.Hour, "s", "k1", `{"a":1}`, `{"id":2}`, ok)},
			map[Kind]int{DoubleExecution: 1}},
		{"hit rate over the threshold", Options{MaxHitRate: 0.05}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), replayed(call(time.Second, "s", "k1", `{"a":1}`, `{"id":1}`, ok))},
			map[Kind]int{HitRate: 1}},
		{"hit rate under the threshold", Options{MaxHitRate: 0.5}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), replayed(call(time.Second, "s", "k1", `{"a":1}`, `{"id":1}`, ok))},
			nil},
		{"conflict rate over the threshold", Options{MaxConflictRate: 0.1}, []Call{
			call(0, "s", "k1", `{"a":1}`, `{"id":1}`, ok), conflict(call(0, "s", "k1", `{"a":1}`, "", ok))},
			map[Kind]int{ConflictRate: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.opts.MaxHitRate == 0 {
				tt.opts.MaxHitRate = -1
			}
			if tt.opts.MaxConflictRate == 0 {
				tt.opts.MaxConflictRate = -1
			}
			a := New(tt.opts)
			for _, c := range tt.calls {
				if err := a.Add(c); err != nil {
					t.Fatal(err)
				}
			}
			rep := a.Report()
			got := map[Kind]int{}
			violations := 0
			for _, f := range rep.Findings {
				got[f.Kind]++
				if f.Violation {
					violations++
				}
				if f.Kind != HitRate && f.Kind != ConflictRate && len(f.Calls) == 0 {
					t.Errorf("finding without calls: %+v", f)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(mapOrEmpty(tt.want)) {
				t.Errorf("findings %v, want %v: %+v", got, tt.want, rep.Findings)
			}
			if rep.Violations != violations {
				t.Errorf("violations %d, findings that are violations %d", rep.Violations, violations)
			}
		})
	}
}

func mapOrEmpty(m map[Kind]int) map[Kind]int {
	if m == nil {
		return map[Kind]int{}
	}
	return m
}

// TestAuditWindowBoundsMemory: with a window, the keys remembered stay near the keys inside it
// however many keys the input has; without one, every key is.
func TestAuditWindowBoundsMemory(t *testing.T) {
	for _, tt := range []struct {
		name     string
		opts     Options
		max, min int
	}{
		{"window of a minute", Options{TTL: 30 * time.Second, MaxHitRate: -1, MaxConflictRate: -1}, 2 * 2 * 75, 0},
		{"no window", Options{MaxHitRate: -1, MaxConflictRate: -1}, 1 << 30, 2 * 6000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := New(tt.opts)
			// 6000 keys, one a second over 100 minutes: 60 inside a minute.
			for i := 0; i < 6000; i++ {
				_ = a.Add(call(time.Duration(i)*time.Second, "s", fmt.Sprintf("k%d", i), fmt.Sprintf(`{"n":%d}`, i), `{"id":1}`, outcome.OK))
			}
			_, peak := a.Remembered()
			if peak > tt.max || peak < tt.min {
				t.Errorf("peak %d remembered, want between %d and %d", peak, tt.min, tt.max)
			}
			if n := len(a.Report().Minutes); n != 100 {
				t.Errorf("%d minutes in the series, want 100", n)
			}
		})
	}
}

// TestAuditFindingsCapped: past MaxFindings per tool and kind, findings are counted, not kept.
func TestAuditFindingsCapped(t *testing.T) {
	a := New(Options{MaxFindings: 5, MaxHitRate: -1, MaxConflictRate: -1})
	for i := 0; i < 30; i++ {
		k := fmt.Sprintf("k%d", i)
		_ = a.Add(call(0, "s", k, `{}`, `{"id":1}`, outcome.OK))
		_ = a.Add(call(time.Second, "s", k, `{}`, `{"id":2}`, outcome.OK))
		_ = a.Add(call(2*time.Second, "s", k, `{}`, `{"id":3}`, outcome.OK))
	}
	rep := a.Report()
	if len(rep.Findings) != 5 || rep.Violations != 30 || rep.Tools[0].Findings[DoubleExecution] != 30 {
		t.Errorf("%d findings kept, %d violations, %d counted; want 5, 30, 30", len(rep.Findings), rep.Violations, rep.Tools[0].Findings[DoubleExecution])
	}
	if rep.Findings[0].Count != 3 {
		t.Errorf("key executed %d times, want 3", rep.Findings[0].Count)
	}
}

// TestReadIdemtestTrace: idemtest's own trace (a proxy recording) is audited as one session;
// the lost response's retry under a new key is the "would charge twice" of the proxy.
func TestReadIdemtestTrace(t *testing.T) {
	var b strings.Builder
	w, err := trace.NewWriter(&b, trace.Header{Endpoint: "node server.js", Transport: trace.MCPStdio, Started: t0})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Write(trace.Call{Seq: 1, AtUS: 0, Tool: "refund", Args: json.RawMessage(`{"a":1,"idempotencyKey":"k1"}`), Key: "k1", KeyCarrier: "arg idempotencyKey",
		Mutating: true, Outcome: outcome.Info, Result: json.RawMessage(`{"id":1}`), Fault: "lose-response"})
	_ = w.Write(trace.Call{Seq: 2, AtUS: 1000, Tool: "refund", Args: json.RawMessage(`{"a":1,"idempotencyKey":"k2"}`), Key: "k2", KeyCarrier: "arg idempotencyKey",
		Mutating: true, Outcome: outcome.OK, Result: json.RawMessage(`{"id":2}`)})
	a := New(Options{MaxHitRate: -1, MaxConflictRate: -1})
	if err := Read(context.Background(), "session.trace", strings.NewReader(b.String()), Mapping{}, a.Add); err != nil {
		t.Fatal(err)
	}
	rep := a.Report()
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != FreshKeyRetry || rep.Executions != 2 {
		t.Fatalf("findings %+v, %d executions; want one fresh-key retry and 2 executions", rep.Findings, rep.Executions)
	}
	if w := rep.Findings[0].Calls[1].Where; w != "session.trace:3" {
		t.Errorf("retry at %q, want session.trace:3", w)
	}
}

func TestReadBadInput(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"not JSON", "{}\n{bad\n", "in.jsonl:2:2: not an OTLP JSON"},
		{"wrong shape", `{"resourceSpans": 3}`, "in.jsonl:1:19: not an OTLP JSON"},
		{"bad trace call", `{"idemtest_trace":1,"endpoint":"x"}` + "\n" + `{"seq":"x"}`, "in.jsonl:2:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Read(context.Background(), "in.jsonl", strings.NewReader(tt.in), Mapping{}, func(Call) error { return nil })
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %v, want it to start with %q", err, tt.want)
			}
		})
	}
}

func TestReadStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Read(ctx, "in", strings.NewReader("{}\n{}\n"), Mapping{}, func(Call) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

// TestReadGzip: a gzipped export is recognised by its magic bytes, whatever its name.
func TestReadGzip(t *testing.T) {
	line := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","kind":1,` +
		`"attributes":[{"key":"gen_ai.tool.name","value":{"stringValue":"t"}},{"key":"idempotency.key","value":{"stringValue":"k"}}]}]}]}]}` + "\n"
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(line + line))
	_ = zw.Close()
	n := 0
	err := Read(context.Background(), "export.jsonl", &b, Mapping{}, func(c Call) error {
		n++
		if c.Tool != "t" || c.Key != "k" || c.Where != fmt.Sprintf("export.jsonl:%d", n) {
			t.Errorf("call %+v", c)
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Errorf("%d calls, %v; want 2", n, err)
	}
}
