package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// shepherdEnv, in a process's environment, makes this binary the shepherd of the program it
// names instead of itself (see Shepherd); its value is the program's path.
const shepherdEnv = "IDEMTEST_SHEPHERD"

// lifeline is the pipe whose write end only idemtest holds (close-on-exec, never closed): the
// kernel closes it when idemtest dies, however it dies, and every shepherd then reads end of
// file on its read end.
var lifeline struct {
	once sync.Once
	r, w *os.File
	err  error
}

// The shepherd is this same binary started again (idemtest, or a test binary of a package that
// starts services): it must take over before main, flags or tests run, hence an init function.
func init() {
	if path := os.Getenv(shepherdEnv); path != "" {
		os.Exit(shepherd(path, os.Args[1:]))
	}
}

// Shepherd makes cmd start under a shepherd: a copy of this binary that runs the command as
// its child, in the same process group, and that, should idemtest die without stopping it
// (SIGKILL, a crash), kills the command and everything it started, daemons that called setsid
// included (it is their subreaper). Stopping the process group works as before; the command's
// exit status is the shepherd's. A command that cannot be found is left as is, for Start to
// report. Call it after the command's settings (Dir, Env) are final.
func Shepherd(cmd *exec.Cmd) error {
	if cmd.Err != nil {
		return nil
	}
	check := cmd.Path
	if !filepath.IsAbs(check) && cmd.Dir != "" {
		check = filepath.Join(cmd.Dir, check)
	}
	if _, err := exec.LookPath(check); err != nil {
		return nil // Start reports it, as without a shepherd
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("shepherd: %w", err)
	}
	lifeline.once.Do(func() { lifeline.r, lifeline.w, lifeline.err = os.Pipe() })
	if lifeline.err != nil {
		return fmt.Errorf("shepherd: %w", lifeline.err)
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], shepherdEnv+"="+cmd.Path)
	cmd.Args = append([]string{self}, cmd.Args...)
	cmd.Path = self
	// The shepherd finds its lifeline as fd 3 + len(ExtraFiles): the command's own extra
	// files come first, at the numbers it expects.
	if len(cmd.ExtraFiles) > 0 {
		return errors.New("shepherd: a command with extra files is not supported")
	}
	cmd.ExtraFiles = []*os.File{lifeline.r}
	return nil
}

// shepherd runs the program at path with argv (argv[0] included) and returns its exit code, or
// kills it (the exit status it then dies of is its own) and everything below it when the
// lifeline ends.
func shepherd(path string, argv []string) int {
	_ = BecomeSubreaper()
	const lifelineFD = 3
	syscall.CloseOnExec(lifelineFD)
	life := os.NewFile(lifelineFD, "lifeline")
	// Signals sent to the group reach the command itself; the shepherd outlives them to report
	// its exit. Handled, not ignored: an ignored signal would stay ignored in the command.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for range sigs {
		}
	}()
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, shepherdEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "idemtest: start %s: %v\n", path, err)
		return 127
	}
	orphaned := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, life) // returns at end of file: idemtest is gone
		close(orphaned)
		killDescendants()
		os.Exit(137)
	}()
	err := cmd.Wait()
	select {
	case <-orphaned:
		// The command died of the kill: the sweep goes on until nothing is left below, and
		// then exits; dying of the command's signal now would cut it short.
		select {}
	default:
	}
	// idemtest may have died and the command exited of it before the sweep began: a stdio MCP
	// server ends at the end of its stdin, which idemtest held, and the kernel may close that
	// pipe before the lifeline. Exiting now would leave what the command started running. So
	// while anything is left below, the shepherd gives the lifeline a moment to end; when it
	// does, the reader sweeps and exits.
	if ended(lifelineFD, 0) || len(descendants(os.Getpid())) > 0 && ended(lifelineFD, lifelineGrace) {
		select {}
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			return 1
		}
		return 0
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		// Die of the same signal, so that idemtest reports it as the command's.
		signal.Reset(ws.Signal())
		_ = syscall.Kill(os.Getpid(), ws.Signal())
		time.Sleep(time.Second)
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// lifelineGrace is how long a shepherd whose command exited, leaving processes below, waits
// for the lifeline to end before it exits with the command's status.
const lifelineGrace = time.Second

// ended reports whether the lifeline has ended within wait: its read end polls readable (end
// of file, as idemtest never writes) or hung up.
func ended(fd int, wait time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for deadline := time.Now().Add(wait); ; {
		n, err := unix.Poll(fds, int(max(0, time.Until(deadline).Milliseconds())))
		if err == unix.EINTR && time.Now().Before(deadline) {
			continue
		}
		return err == nil && n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP) != 0
	}
}

// killDescendants SIGKILLs every process below this one until none is left: as subreaper, a
// descendant whose parent died is re-parented here and found on the next pass.
func killDescendants() {
	giveUp := time.Now().Add(5 * time.Second)
	for time.Now().Before(giveUp) {
		below := descendants(os.Getpid())
		if len(below) == 0 {
			return
		}
		for _, pid := range below {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for {
			var ws unix.WaitStatus
			if pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// descendants lists the processes below root, from /proc's parent links.
func descendants(root int) []int {
	parent := parents()
	var out []int
	for pid := range parent {
		for p, depth := parent[pid], 0; p > 1 && depth < 1000; p, depth = parent[p], depth+1 {
			if p == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
