package endpoint

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// arrivalServer records when each request's body was complete, and how many handlers are
// running (started: headers parsed).
type arrivalServer struct {
	*httptest.Server
	started  atomic.Int32
	mu       sync.Mutex
	arrivals []time.Time
	delay    time.Duration
}

func newArrivalServer(t *testing.T, delay time.Duration) *arrivalServer {
	a := &arrivalServer{delay: delay}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "PRI" {
			return // an HTTP/2 preface read as HTTP/1: not a call
		}
		a.started.Add(1)
		io.ReadAll(r.Body)
		now := time.Now()
		a.mu.Lock()
		a.arrivals = append(a.arrivals, now)
		a.mu.Unlock()
		time.Sleep(a.delay)
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *arrivalServer) spread() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	first, last := a.arrivals[0], a.arrivals[0]
	for _, t := range a.arrivals {
		if t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	return last.Sub(first)
}

func TestLastByteHoldsBackUntilSend(t *testing.T) {
	for name, hold := range map[string]Hold{"body": HoldBody, "header end": HoldHeaderEnd} {
		t.Run(name, func(t *testing.T) {
			srv := newArrivalServer(t, 0)
			ep, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}"})
			defer ep.Close()
			ctx := context.Background()
			var ps []Prepared
			for range 4 {
				ps = append(ps, ep.Prepare(ctx, Request{Tool: "x", Args: map[string]any{"a": 1}}, PrepareOptions{LastByte: true, Hold: hold}))
			}
			time.Sleep(100 * time.Millisecond)
			srv.mu.Lock()
			early := len(srv.arrivals)
			srv.mu.Unlock()
			if early != 0 {
				t.Fatalf("%d requests were complete before the release", early)
			}
			if hold == HoldBody && srv.started.Load() != 4 {
				t.Errorf("with the body's last byte held back, %d of 4 handlers were waiting; want all", srv.started.Load())
			}
			if hold == HoldHeaderEnd && srv.started.Load() != 0 {
				t.Errorf("with the header end held back, %d handlers started early", srv.started.Load())
			}
			for _, p := range ps {
				p.Send()
			}
			for _, p := range ps {
				if res := p.Wait(ctx); res.Outcome != OK {
					t.Errorf("copy: %s %q", res.Outcome, res.Error)
				}
			}
		})
	}
}

// TestFanoutReportsItsSpread checks that the copies reached the server within the spread the
// fan-out reported, allowing for the server's own scheduling.
func TestFanoutReportsItsSpread(t *testing.T) {
	for _, syncMode := range []string{SyncBarrier, SyncLastByte} {
		t.Run(syncMode, func(t *testing.T) {
			srv := newArrivalServer(t, 50*time.Millisecond)
			ep, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}"})
			defer ep.Close()
			fo := Fanout(context.Background(), ep, Request{Tool: "x", Key: "k"}, FanoutOptions{Copies: 8, Sync: syncMode})
			for _, r := range fo.Results {
				if r.Outcome != OK || r.Sent.IsZero() || r.Answered.IsZero() {
					t.Fatalf("copy: %+v", r)
				}
			}
			if !fo.Overlapped {
				t.Error("8 copies to a server that takes 50ms did not overlap")
			}
			arrival := srv.spread()
			reported := time.Duration(fo.SpreadUS * 1000)
			t.Logf("%s: reported spread %v, arrival spread %v", syncMode, reported, arrival)
			if arrival > reported+10*time.Millisecond {
				t.Errorf("copies arrived over %v, far beyond the reported %v", arrival, reported)
			}
		})
	}
}

func TestStaggerAndOverlap(t *testing.T) {
	srv := newArrivalServer(t, 0)
	ep, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}"})
	defer ep.Close()
	ctx := context.Background()
	opts := FanoutOptions{Copies: 4, Sync: SyncLastByte, StaggerMin: 30 * time.Millisecond, StaggerMax: 60 * time.Millisecond}
	a := Fanout(ctx, ep, Request{Tool: "x"}, opts)
	b := Fanout(ctx, ep, Request{Tool: "x"}, opts)
	same := true
	for i, off := range a.Offsets {
		if off < opts.StaggerMin || off > opts.StaggerMax {
			t.Errorf("offset %v outside %v..%v", off, opts.StaggerMin, opts.StaggerMax)
		}
		same = same && off == b.Offsets[i]
	}
	if same {
		t.Error("two fan-outs drew the same offsets")
	}
	// Offsets tens of milliseconds apart against a server that answers at once: the first
	// answer comes back before the last copy leaves. That fan-out proved nothing.
	if a.Overlapped {
		t.Errorf("staggered copies to an instant server reported as overlapping (spread %.0fµs)", a.SpreadUS)
	}
	if a.SpreadUS < 1000 {
		t.Errorf("spread %.0fµs, want the stagger to show", a.SpreadUS)
	}
}

func TestConflictAnswersCountAsOverlap(t *testing.T) {
	now := time.Now()
	rs := []Result{
		{Sent: now, Answered: now.Add(time.Millisecond), Conflict: true},
		{Sent: now.Add(2 * time.Millisecond), Answered: now.Add(5 * time.Millisecond)},
	}
	if !overlapped(rs) {
		t.Error("a 409 before the last release should not make the fan-out weak")
	}
	rs[0].Conflict = false
	if overlapped(rs) {
		t.Error("an answer before the last release should")
	}
}

func TestSinglePacketOverH2C(t *testing.T) {
	var mu sync.Mutex
	var arrivals []time.Time
	var protos []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		protos = append(protos, r.Proto)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		w.Header().Set("Idempotent-Replayed", "true")
		w.Write([]byte(`{"key":"` + r.Header.Get("Idempotency-Key") + `"}`))
	}))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &p
	srv.Start()
	defer srv.Close()
	ep, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}", KeyHeader: "Idempotency-Key"})
	fo := Fanout(context.Background(), ep, Request{Tool: "x", Key: "k-h2", Args: map[string]any{"a": 1}}, FanoutOptions{Copies: 8, Sync: SyncSinglePacket})
	for i, r := range fo.Results {
		if r.Outcome != OK || !r.Replayed || r.Result.(map[string]any)["key"] != "k-h2" {
			t.Fatalf("copy %d: %s %q %v", i, r.Outcome, r.Error, r.Result)
		}
	}
	if !fo.Overlapped {
		t.Error("single-packet copies did not overlap")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range protos {
		if p != "HTTP/2.0" {
			t.Fatalf("server saw %s", p)
		}
	}
	first, last := arrivals[0], arrivals[0]
	for _, a := range arrivals {
		if a.Before(first) {
			first = a
		}
		if a.After(last) {
			last = a
		}
	}
	t.Logf("8 streams completed at the server within %v", last.Sub(first))

	// A server without HTTP/2: a clear error, and nothing executed.
	plain := newArrivalServer(t, 0)
	ep2, _ := NewHTTP(HTTPConfig{URL: plain.URL + "/tools/{tool}"})
	fo = Fanout(context.Background(), ep2, Request{Tool: "x"}, FanoutOptions{Copies: 2, Sync: SyncSinglePacket})
	if r := fo.Results[0]; r.Outcome != Fail || !strings.Contains(r.Error, "does not speak HTTP/2") {
		t.Errorf("HTTP/1 server: %s %q", r.Outcome, r.Error)
	}
	if fo.Err == nil || !strings.Contains(fo.Err.Error(), "single-packet: the server does not speak HTTP/2") {
		t.Errorf("HTTP/1 server: fan-out error %v", fo.Err)
	}
	if len(plain.arrivals) != 0 {
		t.Errorf("%d calls completed on a server without HTTP/2", len(plain.arrivals))
	}

	// An MCP endpoint has no streams to end together: refused, not quietly a barrier.
	mcp := NewMCP(MCPConfig{URL: plain.URL + "/mcp"})
	defer mcp.Close()
	fo = Fanout(context.Background(), mcp, Request{Tool: "x"}, FanoutOptions{Copies: 2, Sync: SyncSinglePacket})
	if fo.Err == nil || !strings.Contains(fo.Err.Error(), "needs an HTTP endpoint") || fo.Results[1].Outcome != Fail {
		t.Errorf("MCP endpoint: %v %+v", fo.Err, fo.Results)
	}
}
