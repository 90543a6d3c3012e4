package endpoint

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/testenv"
)

// arrivalServer records when each request's body was complete, and how many handlers are
// running (started: headers parsed). With hold N it answers no call before N have arrived, so
// that N copies overlap by construction rather than by a guess at how long handling takes.
type arrivalServer struct {
	*httptest.Server
	started  atomic.Int32
	mu       sync.Mutex
	arrivals []time.Time
	all      chan struct{}
}

func newArrivalServer(t *testing.T, hold int) *arrivalServer {
	a := &arrivalServer{all: make(chan struct{})}
	if hold == 0 {
		close(a.all)
	}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "PRI" {
			return // an HTTP/2 preface read as HTTP/1: not a call
		}
		a.started.Add(1)
		io.ReadAll(r.Body)
		now := time.Now()
		a.mu.Lock()
		a.arrivals = append(a.arrivals, now)
		if len(a.arrivals) == hold {
			close(a.all)
		}
		a.mu.Unlock()
		select {
		case <-a.all:
		case <-r.Context().Done():
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(a.Close)
	return a
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
			if hold == HoldBody {
				// The headers are complete: every handler starts and waits for the last byte.
				testenv.Eventually(t, time.Minute, func() bool { return srv.started.Load() == 4 }, "4 handlers wait for their body's last byte")
			} else {
				// A later request on a connection of its own has been handled: the server has
				// had every chance to parse the held-back requests' headers.
				if _, err := http.Post(srv.URL+"/probe", "application/json", strings.NewReader("{}")); err != nil {
					t.Fatal(err)
				}
				if n := srv.started.Load(); n != 1 {
					t.Errorf("with the header end held back, %d handlers started early", n-1)
				}
			}
			srv.mu.Lock()
			early := len(srv.arrivals)
			srv.mu.Unlock()
			if want := map[Hold]int{HoldBody: 0, HoldHeaderEnd: 1}[hold]; early != want {
				t.Fatalf("%d requests were complete before the release", early-want)
			}
			for _, p := range ps {
				p.Send()
			}
			for _, p := range ps {
				if res := p.Wait(ctx); res.Outcome != outcome.OK {
					t.Errorf("copy: %s %q", res.Outcome, res.Error)
				}
			}
		})
	}
}

// TestFanoutReportsItsSpread checks what the fan-out reports against its own copies: the spread
// is the distance between the first and the last release, and copies that all reached a server
// which answers none before the last arrived overlapped.
func TestFanoutReportsItsSpread(t *testing.T) {
	for _, syncMode := range []dispatch.Sync{dispatch.SyncBarrier, dispatch.SyncLastByte} {
		t.Run(string(syncMode), func(t *testing.T) {
			srv := newArrivalServer(t, 8)
			ep, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}"})
			defer ep.Close()
			fo := Fanout(context.Background(), ep, Request{Tool: "x", Key: "k"}, FanoutOptions{Copies: 8, Sync: syncMode})
			var first, last time.Time
			for _, r := range fo.Results {
				if r.Outcome != outcome.OK || r.Sent.IsZero() || r.Answered.IsZero() {
					t.Fatalf("copy: %+v", r)
				}
				if r.Answered.Before(r.Sent) {
					t.Errorf("a copy answered (%v) before it was sent (%v)", r.Answered, r.Sent)
				}
				if first.IsZero() || r.Sent.Before(first) {
					first = r.Sent
				}
				if r.Sent.After(last) {
					last = r.Sent
				}
			}
			if !fo.Overlapped {
				t.Error("8 copies to a server that answers none before all arrived did not overlap")
			}
			if want := float64(last.Sub(first).Nanoseconds()) / 1000; fo.SpreadUS != want {
				t.Errorf("reported spread %.1fµs, the copies' releases span %.1fµs", fo.SpreadUS, want)
			}
			if len(srv.arrivals) != 8 {
				t.Errorf("the server saw %d copies, want 8", len(srv.arrivals))
			}
		})
	}
}

func TestStaggerAndOverlap(t *testing.T) {
	srv := newArrivalServer(t, 0)
	ep, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}"})
	defer ep.Close()
	ctx := context.Background()
	opts := FanoutOptions{Copies: 4, Sync: dispatch.SyncLastByte, StaggerMin: 30 * time.Millisecond, StaggerMax: 60 * time.Millisecond}
	before := time.Now()
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
	// A copy never leaves before its offset, and the copies leave in the order of their
	// offsets: bounds and order, which no scheduling delay can break.
	order := make([]int, len(a.Results))
	for i, r := range a.Results {
		order[i] = i
		if r.Sent.IsZero() || r.Sent.Sub(before) < a.Offsets[i] {
			t.Errorf("copy %d left %v after the start, before its offset %v", i, r.Sent.Sub(before), a.Offsets[i])
		}
	}
	sort.SliceStable(order, func(x, y int) bool { return a.Offsets[order[x]] < a.Offsets[order[y]] })
	for k := 1; k < len(order); k++ {
		if a.Results[order[k]].Sent.Before(a.Results[order[k-1]].Sent) {
			t.Errorf("copy %d (offset %v) left before copy %d (offset %v)", order[k], a.Offsets[order[k]], order[k-1], a.Offsets[order[k-1]])
		}
	}
	// Whether staggered copies overlapped is what their timestamps say: the first answer
	// against the last release (how far apart they land depends on the machine's load).
	var lastSent, firstAnswer time.Time
	for _, r := range a.Results {
		if r.Sent.After(lastSent) {
			lastSent = r.Sent
		}
		if firstAnswer.IsZero() || r.Answered.Before(firstAnswer) {
			firstAnswer = r.Answered
		}
	}
	if a.Overlapped != lastSent.Before(firstAnswer) {
		t.Errorf("overlapped %v, but the last copy left at %v and the first answer came at %v", a.Overlapped, lastSent, firstAnswer)
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
	all := make(chan struct{}) // no answer before the 8 streams arrived: they overlap by construction
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		protos = append(protos, r.Proto)
		if len(arrivals) == 8 {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-r.Context().Done():
			return
		}
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
	fo := Fanout(context.Background(), ep, Request{Tool: "x", Key: "k-h2", Args: map[string]any{"a": 1}}, FanoutOptions{Copies: 8, Sync: dispatch.SyncSinglePacket})
	for i, r := range fo.Results {
		if r.Outcome != outcome.OK || !r.Replayed || r.Result.(map[string]any)["key"] != "k-h2" {
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
	fo = Fanout(context.Background(), ep2, Request{Tool: "x"}, FanoutOptions{Copies: 2, Sync: dispatch.SyncSinglePacket})
	if r := fo.Results[0]; r.Outcome != outcome.Fail || !strings.Contains(r.Error, "does not speak HTTP/2") {
		t.Errorf("HTTP/1 server: %s %q", r.Outcome, r.Error)
	}
	if fo.Err == nil || !strings.Contains(fo.Err.Error(), "single-packet: the server does not speak HTTP/2") {
		t.Errorf("HTTP/1 server: fan-out error %v", fo.Err)
	}
	if len(plain.arrivals) != 0 {
		t.Errorf("%d calls completed on a server without HTTP/2", len(plain.arrivals))
	}
}

// TestSettledTiming: an answer is never stamped before its own release, so that no report
// shows answered_us before released_us or below zero, and the overlap is judged on that.
func TestSettledTiming(t *testing.T) {
	now := time.Now()
	rs := []Result{
		// The server answered before the last byte (it did not read the body).
		{Sent: now.Add(2 * time.Millisecond), Answered: now.Add(time.Millisecond)},
		{Sent: now.Add(3 * time.Millisecond), Answered: now.Add(4 * time.Millisecond)},
		{Sent: now, Answered: time.Time{}}, // never answered: left unset
	}
	settle(rs)
	if !rs[0].Answered.Equal(rs[0].Sent) || !rs[1].Answered.Equal(now.Add(4*time.Millisecond)) || !rs[2].Answered.IsZero() {
		t.Errorf("settled: %v %v %v", rs[0].Answered.Sub(now), rs[1].Answered.Sub(now), rs[2].Answered)
	}
	if overlapped(rs) {
		t.Error("copy 1 was answered when released, before copy 2 left: no overlap")
	}
}

// instantServer answers at once and records, per request, when its body was complete and when
// its answer was written: the server's own view of whether two copies were in flight together.
type instantServer struct {
	*httptest.Server
	mu               sync.Mutex
	arrived, written []time.Time
}

func newInstantServer(t *testing.T) *instantServer {
	s := &instantServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		arrived := time.Now()
		w.Write([]byte(`{"ok":true}`))
		w.(http.Flusher).Flush()
		s.mu.Lock()
		s.arrived, s.written = append(s.arrived, arrived), append(s.written, time.Now())
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

// TestStaggeredCopiesAgainstAnInstantServer: two copies released 5 to 10 ms apart against a
// server that answers at once did not overlap, and idemtest must not say they did. With one P
// (GOMAXPROCS=1) a copy that spins until its release kept the scheduler from polling the
// network, so the first answer was stamped up to 10 ms late, after the second release. The
// test judges each round by the server's view, not by a duration: a round where the server got
// the second request more than 2 ms after it had written the first answer, and whose copies left
// when their offsets said, did not overlap.
func TestStaggeredCopiesAgainstAnInstantServer(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, sync := range []dispatch.Sync{dispatch.SyncBarrier, dispatch.SyncLastByte} {
		t.Run(string(sync), func(t *testing.T) {
			srv := newInstantServer(t)
			ep, _ := NewHTTP(HTTPConfig{URL: srv.URL + "/tools/{tool}"})
			defer ep.Close()
			// A seed whose two offsets are 5 to 10 ms apart: drawn, not timed.
			opts := FanoutOptions{Copies: 2, Sync: sync, StaggerMax: 12 * time.Millisecond}
			for seed := uint64(1); ; seed++ {
				off := staggerOffsets(2, FanoutOptions{StaggerMax: opts.StaggerMax, Rand: rand.New(rand.NewPCG(seed, seed))})
				if d := (off[0] - off[1]).Abs(); d >= 5*time.Millisecond && d <= 10*time.Millisecond {
					opts.Rand = rand.New(rand.NewPCG(seed, seed))
					break
				}
			}
			judged, overlapped := 0, []string(nil)
			for round := 0; round < 10; round++ {
				srv.mu.Lock()
				srv.arrived, srv.written = nil, nil
				srv.mu.Unlock()
				fo := Fanout(context.Background(), ep, Request{Tool: "x"}, opts)
				for i, r := range fo.Results {
					if r.Outcome != outcome.OK || r.Answered.Before(r.Sent) {
						t.Fatalf("copy %d: %s %q, answered %v after its release", i+1, r.Outcome, r.Error, r.Answered.Sub(r.Sent))
					}
				}
				srv.mu.Lock()
				apart := srv.arrived[1].Sub(srv.written[0])
				srv.mu.Unlock()
				if apart < 2*time.Millisecond {
					continue // the server saw them close together: this round proves nothing
				}
				// A second copy released late (the whole process descheduled by a loaded machine)
				// was released after the first answer had long arrived, but idemtest could not
				// see it arrive: it was not running either. Only rounds whose copies left on time
				// say anything about how answers are stamped.
				early, late := 0, 1
				if fo.Offsets[1] < fo.Offsets[0] {
					early, late = 1, 0
				}
				if fo.Results[late].Sent.Sub(fo.Results[early].Sent) > fo.Offsets[late]-fo.Offsets[early]+time.Millisecond {
					continue
				}
				judged++
				if fo.Overlapped {
					// A loaded machine can still deschedule the reader of the first answer past the
					// second release; a stamping defect shows in most rounds, not in one.
					overlapped = append(overlapped, fmt.Sprintf("round %d (%v apart at the server)", round, apart))
				}
				opts.Rand = rand.New(rand.NewPCG(uint64(round)+1000, 7)) // later rounds: any offsets
				opts.StaggerMin = 5 * time.Millisecond
			}
			if judged == 0 {
				t.Skip("no round had the copies far apart at the server (a very loaded machine)")
			}
			if 2*len(overlapped) > judged {
				t.Errorf("%d of %d rounds whose second copy reached the server after the first was answered are reported overlapped: %s", len(overlapped), judged, strings.Join(overlapped, ", "))
			}
		})
	}
}
