package main

import (
	"context"
	"os/exec"
	"strings"
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
	a := &agentConn{server: c, stderr: &strings.Builder{}}
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
