package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/idemtest/idemtest/internal/proc"
)

// StdioConfig is an MCP server spoken to over stdio.
type StdioConfig struct {
	Command []string
	Env     []string
	Dir     string
	// Stderr receives the server's standard error (the agent usually shows it); may be nil.
	Stderr io.Writer
	// Grace is how long the server has to exit after its stdin closes or SIGTERM, before
	// SIGKILL; 0 means 5s.
	Grace time.Duration
}

// maxMessage bounds one JSON-RPC message on stdio.
const maxMessage = 64 << 20

// RunStdio speaks MCP to the agent on agentIn/agentOut and to the server, started as a child in
// a process group of its own, on its stdin/stdout. Messages are newline-delimited JSON, as in
// MCP's stdio transport, and pass unchanged except where a fault says otherwise. It returns
// when the agent disconnects (agentIn ends), the server exits, or ctx is cancelled; the server
// has been stopped with its whole process group by then.
func RunStdio(ctx context.Context, rec *Recorder, agentIn io.Reader, agentOut io.Writer, cfg StdioConfig) error {
	if len(cfg.Command) == 0 {
		return errors.New("no server command")
	}
	grace := cfg.Grace
	if grace == 0 {
		grace = 5 * time.Second
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Dir = cfg.Dir
	cmd.Stderr = cfg.Stderr
	toServer, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	// The server's stdout is a pipe of our own, so that Wait does not wait for our reads.
	fromServer, serverOut, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout = serverOut
	proc.Isolate(cmd)
	if err := cmd.Start(); err != nil {
		serverOut.Close()
		fromServer.Close()
		return fmt.Errorf("start mcp server %q: %w", cfg.Command[0], err)
	}
	serverOut.Close()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	s := newMCPSession(rec)
	stop := make(chan struct{}) // closed when the proxy ends: pending delays give up
	var stopMu sync.Mutex       // orders wg.Add of a delay against the end
	stopped := false
	var wg sync.WaitGroup
	var agentMu, serverMu sync.Mutex
	toAgent := func(b []byte) {
		agentMu.Lock()
		defer agentMu.Unlock()
		_, _ = agentOut.Write(b)
	}
	send := func(b []byte) {
		serverMu.Lock()
		defer serverMu.Unlock()
		_, _ = toServer.Write(b)
	}

	serverDone := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(serverDone)
		readLines(fromServer, func(line []byte) {
			deliver, then := s.fromServer(line)
			if deliver {
				toAgent(line)
			}
			if then != nil {
				send(then)
			}
		})
	}()
	agentDone := make(chan struct{})
	go func() {
		// Not in wg: a read of the agent's stream may block until the agent goes away.
		defer close(agentDone)
		readLines(agentIn, func(line []byte) {
			act := s.fromAgent(line)
			switch {
			case act.reply != nil:
				toAgent(act.reply)
			case act.delay > 0:
				stopMu.Lock()
				defer stopMu.Unlock()
				if stopped {
					return
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					t := time.NewTimer(act.delay)
					defer t.Stop()
					select {
					case <-t.C:
						send(line)
					case <-stop:
					}
				}()
			default:
				send(line)
			}
			if act.then != nil {
				send(act.then)
			}
		})
	}()

	select {
	case <-agentDone:
		// The agent disconnected: close the server's stdin, as an MCP client does, and give it
		// time to exit on its own.
		serverMu.Lock()
		_ = toServer.Close()
		serverMu.Unlock()
		t := time.NewTimer(grace)
		select {
		case <-exited:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	case <-serverDone:
	case <-ctx.Done():
	}
	stopMu.Lock()
	stopped = true
	close(stop)
	stopMu.Unlock()
	proc.Stop(cmd.Process.Pid, exited, grace)
	// The server's last answers may still be in the pipe: read them, unless a descendant that
	// left the group holds it open.
	t := time.NewTimer(time.Second)
	select {
	case <-serverDone:
	case <-t.C:
	}
	t.Stop()
	fromServer.Close()
	wg.Wait()
	return nil
}

// readLines calls fn with each newline-terminated line of r (the newline kept, added if the
// stream ended without one) until r ends.
func readLines(r io.Reader, fn func([]byte)) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > maxMessage {
			line = nil
		}
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			fn(line)
		}
		if err != nil {
			return
		}
	}
}
