// Package cmd holds idemtest's commands: flags, wiring and exit codes, no business logic.
//
//	os.Exit(int(cmd.Main()))
//
// Each command has one constructor taking the Factory (streams, version) and an optional
// function that replaces its action in tests:
//
//	io, out, _ := iostreams.Test()
//	code := cmd.Execute(ctx, &cmd.Factory{IO: io, Version: "dev"}, []string{"validate", "scenarios"})
package cmd
