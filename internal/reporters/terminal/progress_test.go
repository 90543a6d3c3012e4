package terminal

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
)

// TestProgressPhases: the live line goes through services starting (names and elapsed time, on
// an injected clock), scenarios and trials done of their totals, and services stopping with the
// slow-stop note; a trial a scenario never ran still counts as done when it ends.
func TestProgressPhases(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgress(&buf, 2, true, false, false, func() time.Time { return clock }, false)
	defer p.Finish()
	p.SetTrials(5)
	sc1, sc2 := &scenario.Scenario{Name: "burst"}, &scenario.Scenario{Name: "retry"}
	last := func() string {
		parts := strings.Split(buf.String(), "\r\x1b[K")
		return parts[len(parts)-1]
	}
	steps := []struct {
		ev      runner.Event
		advance time.Duration // before the event
		want    string
	}{
		{runner.Event{Kind: runner.EventServiceStart, Service: "refundserver"}, 0, "starting refundserver 0s"},
		{runner.Event{Kind: runner.EventServiceStart, Service: "db"}, 3 * time.Second, "starting db 0s, refundserver 3s"},
		{runner.Event{Kind: runner.EventServiceReady, Service: "db"}, 0, "starting refundserver 3s"},
		{runner.Event{Kind: runner.EventServiceReady, Service: "refundserver"}, 0, "0/2 done · 0/5 trials"},
		{runner.Event{Kind: runner.EventScenarioStart, Scenario: sc1}, 0, "0/2 done · 0/5 trials · running burst"},
		{runner.Event{Kind: runner.EventTrialEnd, Scenario: sc1, Trial: 1}, 0, "0/2 done · 1/5 trials · running burst"},
		{runner.Event{Kind: runner.EventScenarioStart, Scenario: sc2}, 0, "0/2 done · 1/5 trials · running burst, retry"},
		// burst stops after trial 1 of 3 (an error): its two trials not run are done too.
		{runner.Event{Kind: runner.EventScenarioEnd, Scenario: sc1, Result: &result.ScenarioResult{Scenario: sc1, Trials: 3}}, 0, "1/2 done · 3/5 trials · running retry"},
		{runner.Event{Kind: runner.EventTrialEnd, Scenario: sc2, Trial: 1}, 0, "1/2 done · 4/5 trials · running retry"},
		{runner.Event{Kind: runner.EventTrialEnd, Scenario: sc2, Trial: 2}, 0, "1/2 done · 5/5 trials · running retry"},
		{runner.Event{Kind: runner.EventScenarioEnd, Scenario: sc2, Result: &result.ScenarioResult{Scenario: sc2, Trials: 2}}, 0, "2/2 done · 5/5 trials"},
		{runner.Event{Kind: runner.EventServiceStopping, Service: "refundserver"}, 0, "stopping refundserver 0s"},
		{runner.Event{Kind: runner.EventServiceSlowStop, Service: "refundserver", SlowAfter: time.Second, Grace: 5 * time.Second}, 2 * time.Second,
			"stopping refundserver 2s (still running after SIGTERM; SIGKILL at 5s)"},
	}
	for i, s := range steps {
		clock = clock.Add(s.advance) // time passes, then the event comes
		p.Event(s.ev)
		if got := last(); got != s.want {
			t.Errorf("step %d (%s): live line %q, want %q", i+1, s.ev.Kind, got, s.want)
		}
	}
}

// TestProgressSlowStopWithoutTerminal: without a live line the slow stop is a line of its own.
func TestProgressSlowStopWithoutTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, 1, false, false, false)
	p.Event(runner.Event{Kind: runner.EventServiceStart, Service: "refundserver"})
	p.Event(runner.Event{Kind: runner.EventServiceSlowStop, Service: "refundserver", SlowAfter: time.Second, Grace: 5 * time.Second})
	p.Finish()
	if want := "idemtest: service refundserver is still running 1s after SIGTERM; SIGKILL at 5s\n"; buf.String() != want {
		t.Errorf("output %q, want %q", buf.String(), want)
	}
}

// TestProgressVerboseClearsTheLiveLine: with the live line on one stream and calls on another
// (stderr and stdout of one terminal), the line is cleared before each call line and drawn again
// after it.
func TestProgressVerboseClearsTheLiveLine(t *testing.T) {
	var term bytes.Buffer // both streams of one terminal
	errOut, out := &prefixWriter{&term, "E:"}, &prefixWriter{&term, "O:"}
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgress(errOut, 1, true, false, false, func() time.Time { return clock }, false)
	p.Verbose(out, false)
	sc := &scenario.Scenario{Name: "burst"}
	p.Event(runner.Event{Kind: runner.EventScenarioStart, Scenario: sc})
	p.Event(runner.Event{Kind: runner.EventCall, Scenario: sc, Trial: 1, Call: &result.Call{Step: "first", Tool: "issue_refund", Key: "k-0", Outcome: "ok", Status: 200}})
	p.Finish()
	want := "E:0/1 done · running burst|E:\r\x1b[K|O:  burst t1 first issue_refund key=k-0 ok 200 0.0ms\n|E:0/1 done · running burst|E:\r\x1b[K|"
	if term.String() != want {
		t.Errorf("terminal got\n%q\nwant\n%q", term.String(), want)
	}
}

type prefixWriter struct {
	w      *bytes.Buffer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.w.WriteString(p.prefix + string(b) + "|")
	return len(b), nil
}

func TestProgressLiveLine(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, 2, true, false, false)
	sc := &scenario.Scenario{Name: "burst"}
	p.Event(runner.Event{Kind: "scenario-start", Scenario: sc})
	if !strings.Contains(buf.String(), "0/2 done · running burst") {
		t.Errorf("live line %q", buf.String())
	}
	p.Event(runner.Event{Kind: "scenario-end", Scenario: sc, Result: &result.ScenarioResult{Scenario: sc, Status: result.Passed}})
	if !strings.Contains(buf.String(), "\r\x1b[K1/2 done") {
		t.Errorf("the line is not redrawn in place: %q", buf.String())
	}
	p.Finish()
	if !strings.HasSuffix(buf.String(), "\r\x1b[K") {
		t.Errorf("Finish left the line: %q", buf.String())
	}
	// Not a terminal: nothing is drawn.
	buf.Reset()
	q := NewProgress(&buf, 2, false, false, false)
	q.Event(runner.Event{Kind: "scenario-start", Scenario: sc})
	q.Finish()
	if buf.Len() != 0 {
		t.Errorf("progress written to a non-terminal: %q", buf.String())
	}
}

// TestProgressPlain: without a terminal, each interval prints plain lines: a service still
// starting with its elapsed time (and, once it is up, its ready line), else each scenario
// running with its trials done of its own total. The ticks are driven by hand on an injected
// clock; nothing waits.
func TestProgressPlain(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgress(&buf, 2, false, false, false, func() time.Time { return clock }, false)
	sc1, sc2 := &scenario.Scenario{Name: "burst"}, &scenario.Scenario{Name: "retry\x1b[31m"}
	p.Plain(time.Hour, func(sc *scenario.Scenario) int { return map[*scenario.Scenario]int{sc1: 3, sc2: 1}[sc] })
	steps := []struct {
		ev      *runner.Event // nil: a tick
		advance time.Duration
		want    string // what the step printed
	}{
		{&runner.Event{Kind: runner.EventServiceStart, Service: "quick"}, 0, ""},
		{&runner.Event{Kind: runner.EventServiceReady, Service: "quick"}, time.Second, ""},
		{&runner.Event{Kind: runner.EventServiceStart, Service: "refundserver"}, 0, ""},
		{nil, 5 * time.Second, "idemtest: service refundserver starting (5s)\n"},
		{nil, 5 * time.Second, "idemtest: service refundserver starting (10s)\n"},
		{&runner.Event{Kind: runner.EventServiceReady, Service: "refundserver"}, 2 * time.Second, "idemtest: service refundserver ready (12s)\n"},
		{nil, 0, ""}, // ready, nothing running yet
		{&runner.Event{Kind: runner.EventScenarioStart, Scenario: sc1}, 0, ""},
		{&runner.Event{Kind: runner.EventTrialEnd, Scenario: sc1, Trial: 1}, 0, ""},
		{&runner.Event{Kind: runner.EventScenarioStart, Scenario: sc2}, 0, ""},
		{nil, 5 * time.Second, "idemtest: running burst: 1/3 trials done (0/2 scenarios done)\nidemtest: running retry\\x1b[31m: 0/1 trial done (0/2 scenarios done)\n"},
		{&runner.Event{Kind: runner.EventScenarioEnd, Scenario: sc2, Result: &result.ScenarioResult{Scenario: sc2, Trials: 1}}, 0, ""},
		{nil, 5 * time.Second, "idemtest: running burst: 1/3 trials done (1/2 scenarios done)\n"},
	}
	for i, s := range steps {
		clock = clock.Add(s.advance)
		before := buf.Len()
		if s.ev != nil {
			p.Event(*s.ev)
		} else {
			p.plainTick()
		}
		if got := buf.String()[before:]; got != s.want {
			t.Errorf("step %d: printed %q, want %q", i+1, got, s.want)
		}
	}
	p.Finish()
	before := buf.Len()
	p.plainTick() // a tick that lost the race with Finish
	if got := buf.String()[before:]; got != "" {
		t.Errorf("after Finish: printed %q, want nothing", got)
	}
}

// TestProgressPlainNotOnTerminal: on a terminal the live line says it all; Plain adds nothing.
func TestProgressPlainNotOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgress(&buf, 1, true, false, false, func() time.Time { return clock }, false)
	defer p.Finish()
	p.Plain(time.Hour, func(*scenario.Scenario) int { return 1 })
	p.Event(runner.Event{Kind: runner.EventServiceStart, Service: "refundserver"})
	before := buf.Len()
	p.plainTick()
	if got := buf.String()[before:]; got != "" {
		t.Errorf("a tick on a terminal printed %q", got)
	}
}

// TestProgressCells: a check or a sweep without a terminal prints a plain line as each cell
// ends (escaped, with its time), and each interval a heartbeat: how long it has run, the cells
// done (of the total once known) and the last one; services starting or stopping are said
// instead. The ticks are driven by hand on an injected clock; nothing waits.
func TestProgressCells(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgress(&buf, 0, false, false, false, func() time.Time { return clock }, false)
	p.Cells("sweep", "run")
	p.Plain(time.Hour, nil)
	steps := []struct {
		do      func()
		advance time.Duration
		want    string
	}{
		{func() { p.Event(runner.Event{Kind: runner.EventServiceStart, Service: "quick"}) }, 0, ""},
		{p.plainTick, 5 * time.Second, "idemtest: service quick starting (5s)\n"},
		{func() { p.Event(runner.Event{Kind: runner.EventServiceReady, Service: "quick"}) }, time.Second, "idemtest: service quick ready (6s)\n"},
		{p.plainTick, 5 * time.Second, "idemtest: sweep running 11s: 0 runs done\n"},
		{func() { p.SetCells(7) }, 0, ""},
		{func() { p.Cell("run 0 (no fault)", matrix.Pass, 1234*time.Millisecond) }, time.Second, "run 0 (no fault) ✓ 1.2s\n"},
		{func() { p.Cell("call 2 refund\x1b[2J drop", matrix.Fail, 50*time.Millisecond) }, 0, "call 2 refund\\x1b[2J drop ✗ 0.1s\n"},
		{p.plainTick, 4 * time.Second, "idemtest: sweep running 16s: 2/7 runs done, the last call 2 refund\\x1b[2J drop\n"},
		{func() { p.Event(runner.Event{Kind: runner.EventServiceStopping, Service: "quick"}) }, 0, ""},
		{p.plainTick, 3 * time.Second, "idemtest: service quick stopping (3s)\n"},
	}
	for i, s := range steps {
		clock = clock.Add(s.advance)
		before := buf.Len()
		s.do()
		if got := buf.String()[before:]; got != s.want {
			t.Errorf("step %d: printed %q, want %q", i+1, got, s.want)
		}
	}
	p.Finish()
}

// TestProgressCellsOnTerminal: on a terminal a cell is "✓ label", a line of its own between
// the live line's clearing and its redrawing, and the ticks add nothing.
func TestProgressCellsOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgress(&buf, 0, true, false, false, func() time.Time { return clock }, false)
	p.Cells("check", "check")
	p.Plain(time.Hour, nil)
	p.Event(runner.Event{Kind: runner.EventServiceStart, Service: "quick"})
	p.Cell("issue_refund replay", matrix.Pass, time.Second)
	p.plainTick()
	p.Finish()
	if want := "starting quick 0s\r\x1b[K✓ issue_refund replay\nstarting quick 0s\r\x1b[K"; buf.String() != want {
		t.Errorf("terminal got %q, want %q", buf.String(), want)
	}
}

// TestProgressHeartbeatTicker: the plain lines come from the ticker Plain starts (a channel
// here, in place of time.NewTicker), and Finish stops it.
func TestProgressHeartbeatTicker(t *testing.T) {
	lines := make(chan string, 4)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgress(lineWriter(lines), 0, false, false, false, func() time.Time { return clock }, false)
	ticks, stopped := make(chan time.Time), make(chan struct{})
	var every time.Duration
	p.ticker = func(d time.Duration) (<-chan time.Time, func()) {
		every = d
		return ticks, func() { close(stopped) }
	}
	p.Cells("check", "check")
	p.Plain(3*time.Second, nil)
	if every != 3*time.Second {
		t.Errorf("ticker every %s, want 3s", every)
	}
	ticks <- clock
	if got, want := <-lines, "idemtest: check running 0s: 0 checks done\n"; got != want {
		t.Errorf("heartbeat %q, want %q", got, want)
	}
	p.Finish()
	<-stopped // the ticker is stopped once Finish has returned
}

type lineWriter chan string

func (w lineWriter) Write(b []byte) (int, error) {
	w <- string(b)
	return len(b), nil
}
