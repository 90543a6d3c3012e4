package endpoint

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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
			srv := newArrivalServer(t, 20*time.Millisecond)
			ep, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}"})
			defer ep.Close()
			fo := Fanout(context.Background(), ep, Request{Tool: "x", Key: "k"}, FanoutOptions{Copies: 8, Sync: syncMode})
			for _, r := range fo.Results {
				if r.Outcome != OK || r.Sent.IsZero() || r.Answered.IsZero() {
					t.Fatalf("copy: %+v", r)
				}
			}
			if !fo.Overlapped {
				t.Error("8 copies to a server that takes 20ms did not overlap")
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
