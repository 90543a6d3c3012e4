// Package battery is the checks of idemtest check (DESIGN §9) and how each decides its cell of
// one tool: it builds an ordinary scenario, runs it through the runner and judges it from the
// declared effects, the sinks, the state and the answers (the exactly-once verdict).
package battery
