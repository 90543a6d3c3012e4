package endpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/outcome"
	"golang.org/x/sync/errgroup"
)

// FanoutOptions say how copies are released.
type FanoutOptions struct {
	Copies int
	Sync   dispatch.Sync
	Hold   Hold
	// StaggerMin and StaggerMax spread the releases: each copy gets a random offset in the
	// range, new for every fan-out.
	StaggerMin, StaggerMax time.Duration
	// Rand draws the offsets; nil uses a fresh source.
	Rand *rand.Rand
	// Targets, when set, holds the endpoint of each copy (an instance of a set, DESIGN §11);
	// otherwise every copy goes to the endpoint given. Single-packet ignores it: its copies
	// are streams of one connection.
	Targets []Endpoint
}

// FanoutResult is what the copies did and the evidence that they raced.
type FanoutResult struct {
	Results []Result
	// SpreadUS is the time between the first and the last copy's release, in microseconds.
	SpreadUS float64
	// Overlapped reports whether every copy was released before the first answer arrived (a
	// conflict answer aside): only then did the copies race.
	Overlapped bool
	// Offsets are the stagger offsets used, by copy.
	Offsets []time.Duration
	// Err is why the copies could not be released at all (single-packet to a server that does
	// not speak HTTP/2, or to an MCP endpoint): nothing reached a handler, every copy failed.
	Err error
}

// Fanout sends opts.Copies copies of req, prepared first and released together.
func Fanout(ctx context.Context, ep Endpoint, req Request, opts FanoutOptions) FanoutResult {
	n := max(opts.Copies, 1)
	if opts.Sync == dispatch.SyncSinglePacket {
		h, ok := ep.(*HTTP)
		if l, listed := ep.(*ListedHTTP); listed {
			h, ok = l.HTTP, true
		}
		if !ok {
			// MCP copies are requests on one session: there are no streams to end together.
			return notSent(n, errors.New("single-packet needs an HTTP endpoint; use sync: barrier or last-byte"))
		}
		fo, err := h.singlePacket(ctx, req, n)
		if err != nil {
			// Nothing was released: no stream was ended, so no handler saw a whole request.
			return notSent(n, err)
		}
		return fo
	}
	popts := PrepareOptions{LastByte: opts.Sync == dispatch.SyncLastByte, Hold: opts.Hold}
	prepared := make([]Prepared, n)
	var pg errgroup.Group
	pg.SetLimit(64)
	for i := range n {
		pg.Go(func() error {
			target := ep
			if i < len(opts.Targets) {
				target = opts.Targets[i]
			}
			prepared[i] = target.Prepare(ctx, req, popts)
			return nil
		})
	}
	_ = pg.Wait()
	offsets := staggerOffsets(n, opts)
	results := make([]Result, n)
	if ctx.Err() != nil {
		for i, p := range prepared {
			p.Abort()
			results[i] = Finish(Result{Start: time.Now()}, outcome.Fail, "interrupted before sending")
		}
		return FanoutResult{Results: results, Offsets: offsets}
	}

	var done sync.WaitGroup
	if opts.Sync == dispatch.SyncLastByte {
		// Readers first, so each answer is seen when it arrives; then one goroutine writes the
		// final bytes back to back, in offset order.
		for i := range n {
			done.Add(1)
			go func() {
				defer done.Done()
				results[i] = prepared[i].Wait(ctx)
			}()
		}
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return offsets[order[a]] < offsets[order[b]] })
		t0 := time.Now()
		for _, i := range order {
			spinUntil(t0.Add(offsets[i]))
			prepared[i].Send()
		}
	} else {
		var released atomic.Bool
		var ready sync.WaitGroup
		var t0 atomic.Int64
		for i := range n {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				ready.Done()
				// Spinning (yielding) rather than blocking on a channel: a parked goroutine
				// takes tens of microseconds to wake, a running one does not.
				for !released.Load() {
					runtime.Gosched()
				}
				spinUntil(time.Unix(0, t0.Load()).Add(offsets[i]))
				results[i] = Fire(ctx, prepared[i])
			}()
		}
		ready.Wait()
		t0.Store(time.Now().UnixNano())
		released.Store(true)
	}
	done.Wait()
	settle(results)
	return FanoutResult{Results: results, SpreadUS: spread(results), Overlapped: overlapped(results), Offsets: offsets}
}

// notSent is a single-packet fan-out that could not be released: every copy failed with err.
func notSent(n int, err error) FanoutResult {
	err = fmt.Errorf("single-packet: %w", err)
	fo := FanoutResult{Results: make([]Result, n), Offsets: make([]time.Duration, n), Err: err}
	for i := range fo.Results {
		fo.Results[i] = Finish(Result{Start: time.Now()}, outcome.Fail, err.Error())
	}
	return fo
}

func staggerOffsets(n int, o FanoutOptions) []time.Duration {
	offsets := make([]time.Duration, n)
	if o.StaggerMax <= 0 {
		return offsets
	}
	r := o.Rand
	if r == nil {
		r = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	width := o.StaggerMax - o.StaggerMin
	for i := range offsets {
		offsets[i] = o.StaggerMin
		if width > 0 {
			offsets[i] += time.Duration(r.Int64N(int64(width) + 1))
		}
	}
	return offsets
}

// spinWindow is how long before its release a copy stops sleeping and spins.
const spinWindow = time.Millisecond

// spinUntil waits for t: asleep until spinWindow before it, then spinning, since a sleep's
// wake-up is far coarser than the windows a stagger aims at. Spinning all the way would keep
// the scheduler from polling the network for up to 10 ms (it polls when a P runs out of work):
// the answer to an earlier copy would then be stamped late, and copies staggered a few
// milliseconds apart against a fast server would look as if they had overlapped.
func spinUntil(t time.Time) {
	if d := time.Until(t) - spinWindow; d > 0 {
		time.Sleep(d)
	}
	for time.Now().Before(t) {
		runtime.Gosched()
	}
}

// settle makes each copy's timing consistent: an answer is never stamped before its own
// release. A server can answer before the last byte of a request (it did not wait for the body);
// that copy is then taken as answered the moment it was released, not earlier.
func settle(results []Result) {
	for i := range results {
		r := &results[i]
		if !r.Answered.IsZero() && !r.Sent.IsZero() && r.Answered.Before(r.Sent) {
			r.Answered = r.Sent
		}
	}
}

func spread(results []Result) float64 {
	var first, last time.Time
	for _, r := range results {
		if r.Sent.IsZero() {
			continue
		}
		if first.IsZero() || r.Sent.Before(first) {
			first = r.Sent
		}
		if r.Sent.After(last) {
			last = r.Sent
		}
	}
	if first.IsZero() {
		return 0
	}
	return float64(last.Sub(first).Nanoseconds()) / 1000
}

// overlapped reports whether the last release came before the first answer. A conflict answer
// (409, "in progress") does not count: it is itself proof that another copy was in flight.
func overlapped(results []Result) bool {
	var lastSent, firstAnswer time.Time
	for _, r := range results {
		if r.Sent.IsZero() {
			return false
		}
		if r.Sent.After(lastSent) {
			lastSent = r.Sent
		}
		if r.Conflict {
			continue
		}
		if !r.Answered.IsZero() && (firstAnswer.IsZero() || r.Answered.Before(firstAnswer)) {
			firstAnswer = r.Answered
		}
	}
	return firstAnswer.IsZero() || lastSent.Before(firstAnswer)
}
