package service

import "time"

// Event tells what happened to a service, for a terminal that shows them while it waits.
type Event struct {
	Kind    EventKind
	Service string
	// SlowAfter and Grace are set on SlowStop: the service is still running SlowAfter after
	// SIGTERM, and SIGKILL follows at Grace.
	SlowAfter time.Duration
	Grace     time.Duration
}

// EventKind says what an Event reports.
type EventKind string

const (
	// Started: a service's process started; it is not ready yet.
	Started EventKind = "service-start"
	// Ready: a service became ready.
	Ready EventKind = "service-ready"
	// Stopping: a service was sent SIGTERM.
	Stopping EventKind = "service-stopping"
	// SlowStop: a service is still running SlowAfter after SIGTERM; SIGKILL follows at Grace.
	SlowStop EventKind = "service-slow-stop"
)
