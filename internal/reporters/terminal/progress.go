package terminal

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/reporters"
	"github.com/idemtest/idemtest/internal/runner"
	"github.com/idemtest/idemtest/internal/scenario"
)

// Progress draws a live line on a terminal from the moment services start until the last one
// has stopped (services starting with their elapsed time, then scenarios and trials done of
// their totals, then services stopping), and prints every call when verbose. Without a terminal
// it prints the note that a service is slow to stop and, once Plain is called, plain lines
// every few seconds. For check and sweep (Cells) it also prints each decided cell as a line of
// its own. It is safe for concurrent use.
type Progress struct {
	w       io.Writer
	live    bool
	verbose bool
	// calls and callSt are where and how calls are printed when verbose: w unless Verbose
	// names another stream (run prints them on stdout, the live line stays on stderr).
	calls  io.Writer
	callSt styles
	st     styles
	now    func() time.Time

	mu                     sync.Mutex
	total, done            int
	trialsTotal, trialsRun int
	scenarioTrials         map[*scenario.Scenario]int
	running                map[string]*scenario.Scenario
	starting, stopping     map[string]time.Time
	slow                   map[string]time.Duration
	drawn                  bool
	stop                   chan struct{}
	// trialsOf is each scenario's number of trials, for the plain lines (Plain); announced
	// holds the services a plain line said were starting, whose ready line follows.
	trialsOf  func(*scenario.Scenario) int
	announced map[string]bool
	plainStop chan struct{}
	// ticker starts the clock of the plain lines (time.NewTicker; a test's channel instead).
	ticker func(time.Duration) (<-chan time.Time, func())

	// cells is set for check and sweep (Cells), which count decided cells, not scenarios.
	cells *cellCount
}

// cellCount is what the plain lines of a check or a sweep say: how long it has been running,
// the cells decided (of how many, when known), and the last one.
type cellCount struct {
	what, noun  string
	began       time.Time
	done, total int
	last        string
}

// PlainEvery is how often Plain prints its lines by default: often enough that a CI log shows
// the run is alive while a service builds, rarely enough not to flood it.
const PlainEvery = 5 * time.Second

// tickEvery is how often the live line is redrawn to advance its elapsed times.
const tickEvery = 500 * time.Millisecond

// NewProgress returns a progress writer for total scenarios; live redraws a status line (only
// on a terminal). With total 0 (check, which counts in cells) the line shows only services.
func NewProgress(w io.Writer, total int, live, verbose, color bool) *Progress {
	return newProgress(w, total, live, verbose, color, time.Now, live)
}

// newProgress takes the clock, and whether a ticker redraws the elapsed times (tests draw on
// events only).
func newProgress(w io.Writer, total int, live, verbose, color bool, now func() time.Time, tick bool) *Progress {
	p := &Progress{
		w: w, live: live, verbose: verbose, total: total, st: newStyles(w, color), now: now, calls: w,
		scenarioTrials: map[*scenario.Scenario]int{}, running: map[string]*scenario.Scenario{}, announced: map[string]bool{},
		starting: map[string]time.Time{}, stopping: map[string]time.Time{}, slow: map[string]time.Duration{},
	}
	p.callSt = p.st
	p.ticker = func(d time.Duration) (<-chan time.Time, func()) {
		t := time.NewTicker(d)
		return t.C, t.Stop
	}
	if tick {
		p.stop = make(chan struct{})
		go p.tick(p.stop)
	}
	return p
}

// Verbose prints every call to out, with colour or not: the live line is cleared before each
// call line and drawn again after it, so that on one terminal the two never mix.
func (p *Progress) Verbose(out io.Writer, color bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.verbose, p.calls, p.callSt = true, out, newStyles(out, color)
}

// SetTrials gives the number of trials the run will make in all, for "trials done of total".
func (p *Progress) SetTrials(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trialsTotal = n
}

// Plain makes a progress without a live line (output is not a terminal) print plain lines to
// its writer every interval, so that a CI log does not sit silent for minutes while a service
// builds or a long scenario runs: each service still starting with its elapsed time (and its
// ready line once it is up), else each scenario running with its trials done of trialsOf's.
// Lines are stable and without colour; a run shorter than one interval prints none. On a
// terminal the live line says all this already, and Plain does nothing.
func (p *Progress) Plain(every time.Duration, trialsOf func(*scenario.Scenario) int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live || every <= 0 || p.plainStop != nil {
		return
	}
	p.trialsOf = trialsOf
	p.plainStop = make(chan struct{})
	ticks, stopTicker := p.ticker(every)
	go func(stop <-chan struct{}) {
		defer stopTicker()
		for {
			select {
			case <-stop:
				return
			case <-ticks:
				p.plainTick()
			}
		}
	}(p.plainStop)
}

// Cells makes p count the cells of a check or a sweep instead of scenarios: what names the
// command ("check", "sweep") and noun what a cell is ("check", "run"). Its plain lines (Plain)
// then say how long it has been running, the cells done and the last one, so that a CI log
// shows a long cell (a concurrent check spending its budget) is alive.
func (p *Progress) Cells(what, noun string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cells = &cellCount{what: what, noun: noun, began: p.now()}
}

// SetCells gives the number of cells to come, for "done of total" (a sweep knows its runs).
func (p *Progress) SetCells(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cells != nil {
		p.cells.total = n
	}
}

// Cell reports a decided cell, label naming it ("issue_refund replay", "call 2 issue_refund
// drop"). On a terminal it is a line of its own, "✓ label", the live line cleared before it and
// drawn after; without one, a stable line without colour as each cell ends, "label ✓ 0.4s", so
// that a piped check is not silent until its matrix.
func (p *Progress) Cell(label string, s matrix.Status, took time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	label = reporters.Escape(label)
	if p.cells != nil {
		p.cells.done++
		p.cells.last = label
	}
	p.clear()
	if p.live {
		fmt.Fprintf(p.w, "%s %s\n", s.Symbol(), label)
	} else {
		fmt.Fprintf(p.w, "%s %s %.1fs\n", label, s.Symbol(), took.Seconds())
	}
	p.draw()
}

// Printf prints a line of its own (format ends without a newline), clearing the live line
// before it and drawing it again after.
func (p *Progress) Printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.w, format+"\n", args...)
	p.draw()
}

// heartbeat is the plain line of a check or sweep between cells.
func (c *cellCount) heartbeat(now time.Time) string {
	done := fmt.Sprintf("%d %s", c.done, plural.Noun(c.done, c.noun))
	if c.total > 0 {
		done = fmt.Sprintf("%d/%d %s", c.done, c.total, plural.Noun(c.total, c.noun))
	}
	line := fmt.Sprintf("idemtest: %s running %ds: %s done", c.what, int(now.Sub(c.began).Seconds()), done)
	if c.last != "" {
		line += ", the last " + c.last
	}
	return line
}

// plainTick prints the plain lines of one interval.
func (p *Progress) plainTick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.plainStop == nil {
		return // finished: nothing more after the report
	}
	now := p.now()
	if len(p.starting) > 0 {
		for _, name := range namesOf(p.starting) {
			p.announced[name] = true
			fmt.Fprintf(p.w, "idemtest: service %s starting (%ds)\n", reporters.Escape(name), int(now.Sub(p.starting[name]).Seconds()))
		}
		return
	}
	if p.cells != nil {
		for _, name := range namesOf(p.stopping) {
			fmt.Fprintf(p.w, "idemtest: service %s stopping (%ds)\n", reporters.Escape(name), int(now.Sub(p.stopping[name]).Seconds()))
		}
		if len(p.stopping) == 0 {
			fmt.Fprintln(p.w, p.cells.heartbeat(now))
		}
		return
	}
	for _, name := range namesOf(p.running) {
		sc := p.running[name]
		fmt.Fprintf(p.w, "idemtest: running %s: %d/%d %s done (%d/%d %s done)\n", reporters.Escape(name),
			p.scenarioTrials[sc], p.trialsOf(sc), plural.Noun(p.trialsOf(sc), "trial"), p.done, p.total, plural.Noun(p.total, "scenario"))
	}
}

func (p *Progress) tick(stop <-chan struct{}) {
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			if len(p.starting)+len(p.stopping) > 0 {
				p.clear()
				p.draw()
			}
			p.mu.Unlock()
		}
	}
}

// Event receives runner events.
func (p *Progress) Event(ev runner.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	switch ev.Kind {
	case runner.EventServiceStart:
		p.starting[ev.Service] = p.now()
	case runner.EventServiceReady:
		if p.announced[ev.Service] {
			delete(p.announced, ev.Service)
			fmt.Fprintf(p.w, "idemtest: service %s ready (%ds)\n", reporters.Escape(ev.Service), int(p.now().Sub(p.starting[ev.Service]).Seconds()))
		}
		delete(p.starting, ev.Service)
	case runner.EventServiceStopping:
		delete(p.starting, ev.Service)
		delete(p.announced, ev.Service)
		p.stopping[ev.Service] = p.now()
	case runner.EventServiceSlowStop:
		p.slow[ev.Service] = ev.Grace
		if !p.live {
			fmt.Fprintf(p.w, "idemtest: service %s is still running %s after SIGTERM; SIGKILL at %s\n", reporters.Escape(ev.Service), ev.SlowAfter, ev.Grace)
		}
	case runner.EventScenarioStart:
		p.running[ev.Scenario.Name] = ev.Scenario
	case runner.EventTrialEnd:
		p.trialsRun++
		p.scenarioTrials[ev.Scenario]++
	case runner.EventScenarioEnd:
		delete(p.running, ev.Scenario.Name)
		p.done++
		// Trials a scenario did not run (it stopped at an error, --fail-fast) are done too.
		if ev.Result != nil {
			p.trialsRun += max(0, ev.Result.Trials-p.scenarioTrials[ev.Scenario])
		}
	case runner.EventCall:
		if p.verbose {
			p.callLine(ev)
		}
	}
	p.draw()
}

func (p *Progress) callLine(ev runner.Event) {
	c := ev.Call
	key := c.Key
	if key == "" {
		key = "(none)"
	}
	extra := ""
	if c.Lost {
		extra = " lost"
	}
	if c.Replayed {
		extra += " replayed"
	}
	if c.Error != "" {
		extra += " " + reporters.OneLine(c.Error, 60)
	}
	cp := ""
	if c.Copy > 0 {
		cp = fmt.Sprintf("#%d", c.Copy)
	}
	fmt.Fprintf(p.calls, "  %s t%d %s%s %s key=%s %s %d%s %.1fms\n", p.callSt.dim.Render(reporters.Escape(ev.Scenario.Name)), ev.Trial, reporters.Escape(c.Step), cp, reporters.Escape(c.Tool), reporters.Escape(key),
		c.Outcome, c.Status, extra, float64(c.Duration.Microseconds())/1000)
}

func (p *Progress) clear() {
	if p.live && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *Progress) draw() {
	line := p.line()
	if !p.live || line == "" {
		return
	}
	fmt.Fprint(p.w, p.st.dim.Render(reporters.OneLine(line, 120)))
	p.drawn = true
}

// line is what the live line says now: the services starting or stopping, else the counts.
func (p *Progress) line() string {
	now := p.now()
	elapsed := func(m map[string]time.Time, note func(string) string) string {
		var parts []string
		for _, name := range namesOf(m) {
			parts = append(parts, fmt.Sprintf("%s %ds%s", reporters.Escape(name), int(now.Sub(m[name]).Seconds()), note(name)))
		}
		return strings.Join(parts, ", ")
	}
	switch {
	case len(p.starting) > 0:
		return "starting " + elapsed(p.starting, func(string) string { return "" })
	case len(p.stopping) > 0:
		return "stopping " + elapsed(p.stopping, func(name string) string {
			if g, ok := p.slow[name]; ok {
				return fmt.Sprintf(" (still running after SIGTERM; SIGKILL at %s)", g)
			}
			return ""
		})
	}
	if p.total == 0 {
		return ""
	}
	line := fmt.Sprintf("%d/%d done", p.done, p.total)
	if p.trialsTotal > 0 {
		line += fmt.Sprintf(" · %d/%d %s", p.trialsRun, p.trialsTotal, plural.Noun(p.trialsTotal, "trial"))
	}
	if len(p.running) > 0 {
		line += " · running " + strings.Join(namesOf(p.running), ", ")
	}
	return line
}

func namesOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Finish removes the live line and stops redrawing it.
func (p *Progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	if p.plainStop != nil {
		close(p.plainStop)
		p.plainStop = nil
	}
	p.clear()
}
