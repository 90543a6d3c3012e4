package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
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
	// MaxLine bounds one message in either direction; 0 means MaxLine.
	MaxLine int
}

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
	stderrTail := proc.NewTail(stderrKept)
	cmd.Stderr = stderrTail
	if cfg.Stderr != nil {
		cmd.Stderr = io.MultiWriter(stderrTail, cfg.Stderr)
	}
	// A Stderr that is not a file is copied through a pipe: a descendant that left the group
	// and keeps it open must not keep Wait from returning.
	cmd.WaitDelay = time.Second
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

	maxLine := cfg.MaxLine
	if maxLine <= 0 {
		maxLine = MaxLine
	}
	p := &stdioProxy{s: newMCPSession(rec), rec: rec, max: maxLine, hold: rec.opts.Hold, agentOut: agentOut, toServer: toServer, stop: make(chan struct{})}
	serverDone := make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(serverDone)
		readLines(fromServer, maxLine, p.fromServer, p.serverDropped)
	}()
	agentDone := make(chan struct{})
	go func() {
		// Not in wg: a read of the agent's stream may block until the agent goes away.
		defer close(agentDone)
		readLines(agentIn, maxLine, p.fromAgent, p.agentDropped)
	}()

	serverEnded := false
	select {
	case <-agentDone:
		// The agent disconnected, giving up on every call a timeout fault still holds: they
		// reach the server now, late. Then close the server's stdin, as an MCP client does, and
		// give it time to exit on its own.
		for _, b := range p.s.releaseAll() {
			p.send(b)
		}
		// The proxy's own tools/list tells the verdict which tools are read-only: a server
		// whose stdin closes may drop an answer it has not written yet, so wait for it first
		// (within the grace, as for the exit).
		wait, cancel := context.WithTimeout(ctx, grace)
		select {
		case <-p.s.ownListed():
		case <-exited:
		case <-wait.Done():
		}
		p.serverMu.Lock()
		_ = toServer.Close()
		p.serverMu.Unlock()
		select {
		case <-exited:
		case <-wait.Done():
		}
		cancel()
	case <-serverDone:
		serverEnded = true
	case <-ctx.Done():
	}
	p.stopMu.Lock()
	p.stopped = true
	close(p.stop)
	p.stopMu.Unlock()
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
	p.wg.Wait()
	var what string
	switch {
	case serverEnded:
		what = "ended before the agent disconnected (" + cmd.ProcessState.String() + ")"
	default:
		what = p.s.initProblem()
	}
	if what == "" {
		if se := p.s.sessionError(); se != nil {
			return se
		}
		return nil
	}
	return &UpstreamError{Command: strings.Join(cfg.Command, " "), What: what, StderrTail: fromLine(stderrTail.String(), stderrKept)}
}

// UpstreamError is a tool server that failed the agent: it ended while the agent was still
// connected, or never answered the agent's initialize request. No verdict on the agent can
// stand on such a session.
type UpstreamError struct {
	// Command is the server's command line (stdio), URL its address (HTTP).
	Command, URL string
	What         string
	// StderrTail is the end of what the server wrote to its standard error (stdio).
	StderrTail string
	// LastAnswer is the latest failure of an HTTP upstream: a connection error or a status.
	LastAnswer string
}

// Error names the server and how it failed, with the end of its stderr (stdio) or its last
// failure (HTTP).
func (e *UpstreamError) Error() string {
	if e.URL != "" {
		msg := fmt.Sprintf("tool server at %s %s", e.URL, e.What)
		if e.LastAnswer != "" {
			msg += " (last: " + e.LastAnswer + ")"
		}
		return msg
	}
	msg := fmt.Sprintf("tool server %q %s", e.Command, e.What)
	tail := strings.TrimRight(e.StderrTail, "\n")
	if tail == "" {
		return msg + "; it wrote nothing to stderr"
	}
	return msg + "; the end of its stderr:\n  " + strings.ReplaceAll(tail, "\n", "\n  ")
}

// stderrKept is how much of the end of the server's stderr an UpstreamError quotes.
const stderrKept = 2 << 10

// fromLine is the kept end of an output: from the start of a line when the kept bytes are all
// that could be kept (the first line is then likely cut), and as valid UTF-8.
func fromLine(kept string, limit int) string {
	if len(kept) == limit {
		if i := strings.IndexByte(kept, '\n'); i >= 0 && i < len(kept)-1 {
			kept = kept[i+1:]
		}
	}
	return strings.ToValidUTF8(kept, "\uFFFD")
}

// stdioProxy moves messages between an agent and a server over stdio.
type stdioProxy struct {
	s        *mcpSession
	rec      *Recorder
	max      int
	hold     time.Duration
	agentOut io.Writer
	toServer io.Writer
	agentMu  sync.Mutex
	serverMu sync.Mutex

	// stop is closed when the proxy ends: pending delays and holds give up.
	stop    chan struct{}
	stopMu  sync.Mutex // orders wg.Add of a timer against the end
	stopped bool
	wg      sync.WaitGroup
}

func (p *stdioProxy) toAgent(b []byte) error {
	p.agentMu.Lock()
	defer p.agentMu.Unlock()
	_, err := p.agentOut.Write(b)
	return err
}

func (p *stdioProxy) send(b []byte) {
	p.serverMu.Lock()
	defer p.serverMu.Unlock()
	_, _ = p.toServer.Write(b)
}

func (p *stdioProxy) fromServer(line []byte) {
	deliver, then := p.s.fromServer(line)
	if deliver {
		if err := p.toAgent(line); err != nil {
			p.s.undeliverable(line, err)
		}
	}
	if then != nil {
		p.send(then)
	}
}

// agentDropped answers the agent for a request dropped at the line cap, and notes the drop.
func (p *stdioProxy) agentDropped(d dropped) {
	reply, note := p.s.agentDropped(d, p.max)
	p.rec.Note(note)
	if reply != nil {
		_ = p.toAgent(reply)
	}
}

// serverDropped answers the agent for an answer dropped at the line cap, and notes the drop.
func (p *stdioProxy) serverDropped(d dropped) {
	reply, note := p.s.serverDropped(d, p.max)
	p.rec.Note(note)
	if reply != nil {
		_ = p.toAgent(reply)
	}
}

func (p *stdioProxy) fromAgent(line []byte) {
	act := p.s.fromAgent(line)
	if act.forward != nil {
		line = act.forward
	}
	switch {
	case act.reply != nil:
		_ = p.toAgent(act.reply)
	case act.skip:
	case act.delay > 0:
		p.after(act.delay, func() { p.send(line) })
	default:
		p.send(line)
	}
	if act.then != nil {
		p.send(act.then)
	}
	if act.watch != "" {
		p.after(p.hold, func() {
			reply, release := p.s.expire(act.watch)
			if reply != nil {
				_ = p.toAgent(reply)
			}
			if release != nil {
				p.send(release)
			}
		})
	}
}

// after runs fn after d, unless the proxy ends first.
func (p *stdioProxy) after(d time.Duration, fn func()) {
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	if p.stopped {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			fn()
		case <-p.stop:
		}
	}()
}
