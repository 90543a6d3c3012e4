// Package baseline lets a CI gate be adopted on a server with known bugs (DESIGN §12): it reads
// a committed JSON report of run, check or sweep, names each failure in it and in the current
// report by a stable identity (what was judged and how it failed; never keys, times, sessions
// or ids), and classifies the failures as new, known or fixed.
//
//	base, err := baseline.ReadFile("baseline.json", baseline.Run)
//	now, err := baseline.Parse(currentJSON, "current report", baseline.Run)
//	res := baseline.Classify(base, now, baseline.FailOnNew)
//	fmt.Println(res.Line()) // Baseline: 1 new, 2 known, 1 fixed — update the baseline with --update-baseline
package baseline
