// Package battery is the checks of idemtest check (DESIGN §9) and how each decides its cell of
// one tool: it builds an ordinary scenario (a rig.Plan), runs it through its rig and judges it
// from the evidence, strongest first: the declared effects, the sinks, the state, the answers
// (the exactly-once verdict) and the status codes of the chosen Profile.
//
// A check is a method of Battery in a file of its own (replay.go, key_scope.go, …) and a line in
// the table of checks.go; its id is stable, and the table's order is the matrix's.
//
//	b := battery.New(ctx, target, rig.Options{Rounds: 20, Budget: 2 * time.Second, Fanout: 8}, prof)
//	args, why := b.Prepare(tool) // why: the tool cannot be checked
//	cell := b.Cell(battery.Replay, tool, args)
package battery
