package runner

import (
	"time"

	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/service"
)

// Event is a progress notification.
type Event struct {
	// Kind says what happened; a service's events name it in Service.
	Kind      EventKind
	Service   string
	SlowAfter time.Duration
	Grace     time.Duration
	Scenario  *scenario.Scenario
	Result    *result.ScenarioResult
	Call      *result.Call
	Trial     int
	Session   string
}

// EventKind says what an Event reports.
type EventKind string

const (
	// EventScenarioStart: a scenario's first trial starts.
	EventScenarioStart EventKind = "scenario-start"
	// EventScenarioEnd: a scenario is done; Result holds its result.
	EventScenarioEnd EventKind = "scenario-end"
	// EventCall: a call was answered (or not); Call holds it.
	EventCall EventKind = "call"
	// EventTrialEnd: a trial of Scenario ended (Trial is its index).
	EventTrialEnd EventKind = "trial-end"
	// EventServiceStart: a service's process started; it is not ready yet.
	EventServiceStart = EventKind(service.Started)
	// EventServiceReady: a service became ready.
	EventServiceReady = EventKind(service.Ready)
	// EventServiceStopping: a service was sent SIGTERM.
	EventServiceStopping = EventKind(service.Stopping)
	// EventServiceSlowStop: a service is still running SlowAfter after SIGTERM; SIGKILL follows
	// at Grace.
	EventServiceSlowStop = EventKind(service.SlowStop)
)

func (r *runner) emit(ev Event) {
	if r.opts.OnEvent != nil {
		r.opts.OnEvent(ev)
	}
}
