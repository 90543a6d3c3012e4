// Package scenariogen owns the scenarios that idemtest check and idemtest sweep build in memory, as
// they are written: a Spec becomes both the scenario the runner runs (Scenario, compiled as the
// loader compiles a file) and, with --write, the file saved (Marshal, Write), so what is saved
// is what ran.
//
//	s := &scenariogen.Spec{Name: "refund: a retry", Endpoint: "refunds", Tool: "refund", Check: "replay",
//		Steps: []scenariogen.Step{{ID: "first", CallTool: "refund", Args: args}, {ID: "retry", RetryOf: "first"}}}
//	sc, err := s.Scenario(base) // run it with runner.Env.Run
//	paths, err := scenariogen.Write("scenarios/check", []*scenariogen.Spec{s}, nil)
package scenariogen
