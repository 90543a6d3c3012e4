// Package rig runs the scenarios of idemtest check's battery through the runner and measures
// the tool being checked, so that the checks (package battery) only build scenarios and judge
// them. Before a tool's checks, Prepare builds its arguments (check.tools.NAME.args, else
// synthesised) and calls it once, plainly: what one execution sends to each sink, how it changes
// the state reads (OneCall), how long it takes, and whether the declared effects count it. Exec
// runs a Plan (a spec and what the battery counts about it), adding the sink and effects
// assertions its executions imply, and keeps what they showed.
//
//	r := rig.New(ctx, rig.Target{Env: env, Base: base, Def: def, Config: cfg, Tools: tools}, rig.Options{})
//	args, why := r.Prepare(tool)
//	res, err := r.Exec(r.NewPlan(tool, "replay", "a retry", steps...))
package rig
