// Package reporterstest holds what the reporters' tests share: the recorded runs and battery
// every format renders (internal/reporters/testdata), a hand-built report for what no recording
// can hold, and golden-file comparison with -update.
//
//	rep := reporterstest.Recorded(t, "run.none.json")
//	reporterstest.Golden(t, "run.none.txt", out.Bytes())
package reporterstest
