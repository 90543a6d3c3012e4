// Package result is the model of a run's outcome: the Report of a run, each scenario's
// ScenarioResult over its trials, every Trial with the history of its Calls, the Failure that
// ended a trial (its FailureKind, its step and line), the Metrics of idempotency behaviour and
// the calls the exactly-once verdict did not judge (Unjudged). Package runner fills it in;
// reporters, check, sweep and the commands read it.
package result
