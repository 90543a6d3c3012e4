// Package check is idemtest check, the conformance battery (DESIGN §9), as the command runs it:
// it starts what the endpoint needs, lists the endpoint's tools, refuses a check: section that
// does not fit them, and runs the battery on every mutating tool, a row per tool and a cell per
// check, with the whole-server diagnoses above the matrix. Each cell is an ordinary in-memory
// scenario run through the runner.
//
// The parts live below it, one concept each:
//   - battery: the checks (one file each, registered in checks.go) and how a cell is decided;
//   - rig: running a check's scenario and measuring the tool (arguments, sinks, effects, latency);
//   - state: the state evidence (snapshot reads, deltas, minted ids);
//   - synth: arguments built from an input schema;
//   - spec: a scenario as written, run and saved with --write;
//   - history: the call history shown under a cell.
//
// Run it, print the matrix and save what ran:
//
//	base, _ := load.Config(".", load.Options{})
//	rep, err := check.Run(ctx, base, check.Options{Endpoint: "refunds"})
//	terminal.WriteMatrix(os.Stdout, rep.Matrix(), false) // internal/reporters/terminal
//	paths, err := spec.Write("scenarios/check", rep.Specs(), nil) // what ran, as scenario files
package check
