// Package proc owns the processes idemtest starts (services, stdio MCP servers): each runs in a
// process group of its own and is stopped with the whole group; its output is kept in a bounded
// Tail for reports; on Linux idemtest is the subreaper of its descendants, so that one that left
// its group (setsid) is still found and stopped at exit. HandleInterrupts turns SIGINT,
// SIGTERM and SIGHUP into a cancelled run, and a second one into every child killed at once.
//
//	cmd := exec.Command("node", "server.js")
//	out := proc.NewTail(64 << 10)
//	w, _ := out.Writer() // Mark, Since and String take in what the pipe holds at that instant
//	cmd.Stdout, cmd.Stderr = w, w
//	proc.Isolate(cmd)
//	_ = cmd.Start()
//	w.Close()
//	defer out.Close()
//	done := make(chan struct{})
//	go func() { _ = cmd.Wait(); close(done) }()
//	...
//	proc.Stop(cmd.Process.Pid, done, 5*time.Second)
package proc
