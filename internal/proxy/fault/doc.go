// Package fault names the faults the proxy injects into an agent's calls (lose-response,
// timeout, error:STATUS, delay:DURATION) and reads them from --fault and --fault-kinds; the
// proxy injects them and agentverdict reads their names back from a trace.
package fault
