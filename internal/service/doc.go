// Package service supervises the processes of scenarios' services: it starts each once per run
// in a process group of its own (on a free port, with its templates rendered), waits until it is
// ready, notices one that dies, keeps its output for failure reports and stops it on every path
// out. A service with replicas: N runs N such processes, each on its own port and told its
// replica (1 to N); all are ready before Start returns.
//
//	set, err := service.Start(ctx, scenarios, sinkURLs, onEvent)
//	if err != nil { ... } // a service that did not start or never became ready, with its output
//	defer set.Stop()
//	env := set.TemplateEnv(sc) // services.NAME.port and .url for the scenario's templates
//	// (the first replica's; services.NAME.replicas lists every replica's)
package service
