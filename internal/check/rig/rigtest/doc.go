// Package rigtest holds what the tests of check and of its battery share: a config written as
// idemtest.yaml and loaded as the command loads it, and a rig.Target on it, started as check.Run
// starts one, so that a test can run single checks of the battery against a server of its own.
//
//	base := rigtest.Config(t, `endpoints: {plain: {http: {url: "`+srv.URL+`/tools/{tool}"}, mutating: [pay]}}`)
//	target := rigtest.Target(t, base, "plain")
//	b := battery.New(ctx, target, rig.Options{Budget: time.Second, Fanout: 8}, prof)
package rigtest
