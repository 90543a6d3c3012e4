//go:build unix

package main

import (
	"bufio"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

// agentConn is an agent's connection, on the official Go MCP SDK, to the MCP server it started
// over stdio: how the proxy and sweep scripts' agents reach their tools (usually through
// "idemtest proxy ... -- refundserver --stdio").
type agentConn struct {
	// ctx bounds the whole session (two minutes); cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc
	cs     *mcp.ClientSession
	// server is the started command; stderr keeps what it wrote to its standard error.
	server *exec.Cmd
	stderr *strings.Builder
	// stop ends the server once the client has closed: over streamable HTTP, SIGTERM to the
	// proxy (its normal end), then its exit and the end of its stderr are awaited; over
	// stdio, closing the client already did.
	stop func()
}

// connectAgent starts argv in the script's directory, with the script's environment, as the MCP
// server of a client called name, and connects to it; it fails the script when it cannot.
func connectAgent(ts *testscript.TestScript, name string, argv []string) *agentConn {
	path, err := lookPath(ts.Getenv("PATH"), argv[0])
	ts.Check(err)
	c := exec.Command(path, argv[1:]...)
	c.Dir = ts.MkAbs(".")
	env := ts.Value(envKey{}).(*testscript.Env)
	for _, kv := range env.Vars {
		k, _, _ := strings.Cut(kv, "=")
		c.Env = append(c.Env, k+"="+ts.Getenv(k))
	}
	a := &agentConn{server: c, stderr: &strings.Builder{}, stop: func() {}}
	c.Stderr = a.stderr
	a.ctx, a.cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	a.cs, err = client.Connect(a.ctx, &mcp.CommandTransport{Command: c, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		a.cancel()
		ts.Fatalf("connect: %v\n%s", err, a.stderr.String())
	}
	return a
}

var listeningOn = regexp.MustCompile(`listening on (http://[^ ]+)`)

// connectAgentHTTP starts argv (an "idemtest proxy --listen 127.0.0.1:0 ...") as connectAgent
// does, waits for its "listening on http://ADDR" line, and connects a client called name to
// ADDR/mcp over streamable HTTP. The listening line is left out of stderr: its port changes.
func connectAgentHTTP(ts *testscript.TestScript, name string, argv []string) *agentConn {
	path, err := lookPath(ts.Getenv("PATH"), argv[0])
	ts.Check(err)
	c := exec.Command(path, argv[1:]...)
	c.Dir = ts.MkAbs(".")
	env := ts.Value(envKey{}).(*testscript.Env)
	for _, kv := range env.Vars {
		k, _, _ := strings.Cut(kv, "=")
		c.Env = append(c.Env, k+"="+ts.Getenv(k))
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipe, err := c.StderrPipe()
	ts.Check(err)
	ts.Check(c.Start())
	a := &agentConn{server: c, stderr: &strings.Builder{}}
	addr := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pipe)
		found := false
		for sc.Scan() {
			if m := listeningOn.FindStringSubmatch(sc.Text()); m != nil && !found {
				found = true
				addr <- m[1]
				continue
			}
			a.stderr.WriteString(sc.Text() + "\n")
		}
		if !found {
			close(addr)
		}
	}()
	done := false
	a.stop = func() {
		if done {
			return
		}
		done = true
		_ = c.Process.Signal(syscall.SIGTERM)
		<-copied
		_ = c.Wait()
	}
	a.ctx, a.cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	fail := func(format string, args ...any) {
		a.cancel()
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		a.stop()
		ts.Fatalf(format+"\n%s", append(args, a.stderr.String())...)
	}
	var base string
	select {
	case u, ok := <-addr:
		if !ok {
			fail("%s exited before listening", argv[0])
		}
		base = u
	case <-a.ctx.Done():
		fail("%s did not listen", argv[0])
	}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	a.cs, err = client.Connect(a.ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		fail("connect: %v", err)
	}
	return a
}
