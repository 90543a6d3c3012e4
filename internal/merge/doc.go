// Package merge joins the JSON reports of the jobs one suite was split into (run --shard K/N,
// check --shard K/N) into one report of the same kind, for the reporters to render again.
// Reports are data: they are read capped and decoded, never run.
//
//	a, _ := merge.ReadFile("shard-1.json")
//	b, _ := merge.ReadFile("shard-2.json")
//	rep, err := merge.Run([]*merge.Input{a, b})
package merge
