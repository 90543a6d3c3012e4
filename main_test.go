//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/idemtest/idemtest/cmd"
	"github.com/idemtest/idemtest/internal/reportschema/schemacheck"
	"github.com/idemtest/idemtest/internal/testenv"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"idemtest": func() { os.Exit(int(cmd.Main())) },
	})
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// buildRefundServer builds the reference server (and the red-team server) once, for scripts
// that start them.
func buildRefundServer(t testing.TB) string {
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "idemtest-bin")
		if buildErr != nil {
			return
		}
		// The reference server, and the red-team server the false-green scripts run in its
		// broken modes (built once here, copied into each script's $WORK/bin).
		out, err := exec.Command("go", "build", "-o", binDir+string(os.PathSeparator), "./examples/refundserver", "./testdata/redteam/badserver").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build refundserver and badserver: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// passEnv are the variables scripts inherit, so that "go run" works inside them as in a shell.
var passEnv = []string{"HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY", "GOTOOLCHAIN", "CI", "TMPDIR", "DATABASE_URL", "REDIS_ADDR"}

func TestScripts(t *testing.T) {
	bin := buildRefundServer(t)
	repo, _ := os.Getwd()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		UpdateScripts:       *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("REPO", repo)
			env.Setenv("BADSERVER", filepath.Join(bin, "badserver"))
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			for _, k := range passEnv {
				if v, ok := os.LookupEnv(k); ok {
					env.Setenv(k, v)
				}
			}
			if os.Getenv("HOME") == "" {
				env.Setenv("HOME", env.WorkDir)
			}
			env.Setenv("NO_COLOR", "")
			env.Setenv("MEMORY_SERVER", memoryServer(repo))
			env.Setenv("DIRECTUS_SPEC", directusSpec(repo))
			env.Setenv("NPM_BIN", filepath.Join(repo, ".cache", "npm", "node_modules", ".bin"))
			env.Setenv("NPM_MODULES", filepath.Join(repo, ".cache", "npm", "node_modules"))
			env.Values[envKey{}] = env
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if pkg, ok := strings.CutPrefix(cond, "npm:"); ok {
				return npmInstalled(repo, pkg)
			}
			switch cond {
			case "xmllint":
				// JUnit reports are validated against the xUnit schema; CI=true requires xmllint.
				if _, err := exec.LookPath("xmllint"); err != nil {
					if testenv.Required() {
						return false, fmt.Errorf("xmllint is not installed (CI=true requires it; .ci/run installs libxml2-utils)")
					}
					return false, nil
				}
				return true, nil
			case "memoryserver":
				return memoryServer(repo) != "", nil
			case "directusspec":
				return directusSpec(repo) != "", nil
			case "postgres", "redis":
				// Scripts skip without the service, except under CI=true, where that fails.
				addr := map[string]string{"postgres": "127.0.0.1:5432", "redis": "127.0.0.1:6379"}[cond]
				if err := testenv.Reachable(cond, addr); err != nil {
					if testenv.Required() {
						return false, err
					}
					return false, nil
				}
				return true, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"listen":      cmdListen,
			"requests":    cmdRequests,
			"exits":       cmdExits,
			"gone":        cmdGone,
			"binfile":     cmdBinfile,
			"replace":     cmdReplace,
			"mcpagent":    cmdMCPAgent,
			"mcpsession":  cmdMCPSession,
			"readme":      cmdReadme,
			"module":      cmdModule,
			"normalize":   cmdNormalize,
			"readtrace":   cmdReadTrace,
			"jsonschema":  cmdJSONSchema,
			"rerunhint":   cmdRerunHint,
			"serve":       cmdServe,
			"instances":   cmdInstances,
			"jsonget":     cmdJSONGet,
			"jsonsame":    cmdJSONSame,
			"secretenv":   cmdSecretEnv,
			"echoserve":   cmdEchoServe,
			"noleak":      cmdNoLeak,
			"matrix":      cmdMatrix,
			"sweepmatrix": cmdSweepMatrix,
			"ghsummary":   cmdGHSummary,
		},
	})
}

// cmdJSONSchema parses FILE (or "stdout", the last command's) as the machine-readable output
// KIND (run, check, sweep, proxy, tools, trace, audit) and validates it against the schema that
// idemtest schema --report KIND prints, as jq and CI steps would read it. With !, the file must
// not validate.
func cmdJSONSchema(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: jsonschema KIND FILE|stdout")
	}
	err := schemacheck.Validate(args[0], []byte(ts.ReadFile(args[1])))
	switch {
	case neg && err == nil:
		ts.Fatalf("jsonschema %s %s: valid", args[0], args[1])
	case neg:
		ts.Logf("jsonschema %s %s: %v", args[0], args[1], err)
	case err != nil:
		ts.Fatalf("jsonschema %s %s: %v", args[0], args[1], err)
	}
}

// envKey holds the Setup environment, for commands that build an exec.Cmd themselves
// (mcpagent hands one to the MCP SDK) and so cannot use ts.Exec.
type envKey struct{}

// memoryServer is the npm MCP server the interop script talks to, installed by .ci/run.
func memoryServer(repo string) string {
	p := filepath.Join(repo, ".cache", "npm", "node_modules", ".bin", "mcp-server-memory")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	if _, err := exec.LookPath("node"); err != nil {
		return ""
	}
	return p
}

// TestInteropServerInstalled makes CI fail, rather than skip the interop script, when the npm
// MCP server is missing.
func TestInteropServerInstalled(t *testing.T) {
	repo, _ := os.Getwd()
	if memoryServer(repo) != "" {
		return
	}
	msg := "the npm MCP server for the interop test is not installed; run: npm install --prefix .cache/npm @modelcontextprotocol/server-memory@2026.8.31"
	testenv.Unmet(t, msg)
}

// directusSpec is a large real-world OpenAPI document that ships in an npm package (Directus's
// API, @directus/specs), installed by .ci/run; "" when it is not installed.
func directusSpec(repo string) string {
	p := filepath.Join(repo, ".cache", "npm", "node_modules", "@directus", "specs", "dist", "openapi.json")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// TestOpenAPISpecInstalled makes CI fail, rather than skip the script that lists a real-world
// OpenAPI document, when the npm package is missing.
func TestOpenAPISpecInstalled(t *testing.T) {
	repo, _ := os.Getwd()
	if directusSpec(repo) != "" {
		return
	}
	msg := "the OpenAPI document for testdata/script/openapi_realworld.txtar is not installed; run: npm install --prefix .cache/npm @directus/specs@15.2.0"
	testenv.Unmet(t, msg)
}

// npmInstalled is the script condition [npm:PKG]: PKG (for example
// @modelcontextprotocol/server-everything) is installed in .cache/npm, where .ci/run puts the
// pinned npm packages, and node runs. Under CI=true a missing package is an error, so CI fails
// rather than skipping the script.
func npmInstalled(repo, pkg string) (bool, error) {
	_, statErr := os.Stat(filepath.Join(repo, ".cache", "npm", "node_modules", pkg, "package.json"))
	_, nodeErr := exec.LookPath("node")
	if statErr == nil && nodeErr == nil {
		return true, nil
	}
	if testenv.Required() {
		return false, fmt.Errorf("npm package %s is not installed in .cache/npm (CI=true requires it; .ci/run installs it)", pkg)
	}
	return false, nil
}

type listener struct {
	count atomic.Int64
}

// cmdListen starts a loopback HTTP server that counts requests: "listen NAME [hang | closed |
// redirect URL]". It sets NAME_URL and NAME_ADDR; with hang it never answers; with closed the
// port is closed again at once (nothing listens there: a server that is not running); with
// redirect it answers every request with a 307 to URL.
func cmdListen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 1 && args[1] == "redirect" && len(args) != 3 {
		ts.Fatalf("usage: listen NAME [hang | closed | redirect URL]")
	}
	if len(args) == 2 && args[1] == "closed" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		addr := ln.Addr().String()
		ts.Check(ln.Close())
		ts.Setenv(args[0]+"_URL", "http://"+addr)
		ts.Setenv(args[0]+"_ADDR", addr)
		return
	}
	hang := len(args) > 1 && args[1] == "hang"
	redirect := ""
	if len(args) == 3 && args[1] == "redirect" {
		redirect = args[2]
	}
	l := &listener{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	stop := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.count.Add(1)
		if redirect != "" {
			http.Redirect(w, r, redirect, http.StatusTemporaryRedirect)
			return
		}
		if hang {
			select {
			case <-stop:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"path": r.URL.Path, "key": r.Header.Get("Idempotency-Key")})
	})}
	go srv.Serve(ln)
	ts.Defer(func() { close(stop); srv.Close() })
	ts.Setenv(args[0]+"_URL", "http://"+ln.Addr().String())
	ts.Setenv(args[0]+"_ADDR", ln.Addr().String())
	ts.Setenv(args[0]+"_PORT", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	listeners.Store(ts, args[0], l)
}

// listeners maps a script's listener names to their counters.
var listeners = listenerMap{m: map[*testscript.TestScript]map[string]*listener{}}

type listenerMap struct {
	mu sync.Mutex
	m  map[*testscript.TestScript]map[string]*listener
}

func (lm *listenerMap) Store(ts *testscript.TestScript, name string, l *listener) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if lm.m[ts] == nil {
		lm.m[ts] = map[string]*listener{}
	}
	lm.m[ts][name] = l
}

func (lm *listenerMap) Load(ts *testscript.TestScript, name string) *listener {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	return lm.m[ts][name]
}

// cmdRequests checks how many requests a listener received: "requests NAME N".
func cmdRequests(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: requests NAME N")
	}
	l := listeners.Load(ts, args[0])
	if l == nil {
		ts.Fatalf("no listener %s", args[0])
	}
	want, _ := strconv.Atoi(args[1])
	if got := l.count.Load(); (got == int64(want)) == neg {
		ts.Fatalf("listener %s received %d requests, want %d", args[0], got, want)
	}
}

// cmdExits runs a program and checks its exit code: "exits CODE PROGRAM ARGS...". It runs
// through ts.Exec, exactly as the built-in exec does: in the script's directory, with the
// script's whole environment (what Setup set, "env" lines, and what commands such as listen
// added), its stdin, and the script's deadline; its output is then the script's stdout and
// stderr. exec alone cannot tell exit 1 (a red verdict) from exit 2 (bad input).
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS...]")
	}
	// CODE may list alternatives ("0|1") where a script accepts either truthful outcome.
	var wants []int
	for _, c := range strings.Split(args[0], "|") {
		w, err := strconv.Atoi(c)
		ts.Check(err)
		wants = append(wants, w)
	}
	err := ts.Exec(args[1], args[2:]...)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("run %s: %v", args[1], err)
	}
	if !slices.Contains(wants, code) {
		ts.Fatalf("%s exited %d, want %s", args[1], code, args[0])
	}
}

// lookPath finds name in pathList, as exec.LookPath does in the process's PATH.
func lookPath(pathList, name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(pathList) {
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && !info.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH", name)
}

// cmdGone checks that the process whose pid is in FILE no longer exists: "gone FILE".
func cmdGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gone PIDFILE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	ts.Check(err)
	if !testenv.Until(time.Minute, func() bool { return syscall.Kill(pid, 0) != nil }) {
		ts.Fatalf("process %d is still running", pid)
	}
}

// cmdBinfile writes a file of binary data: "binfile NAME".
func cmdBinfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: binfile NAME")
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte("\x7fELF\x02\x01\x00\x00name: x\n"), 0o644))
}

// cmdReplace fills in placeholders, as a user edits a generated file: "replace FILE OLD NEW"
// replaces every OLD in FILE; OLD must occur. With -re, OLD is a regular expression, for a
// value the generator chose (a give-up point).
func cmdReplace(ts *testscript.TestScript, neg bool, args []string) {
	re := len(args) > 0 && args[0] == "-re"
	if re {
		args = args[1:]
	}
	if neg || len(args) != 3 {
		ts.Fatalf("usage: replace [-re] FILE OLD NEW")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	if re {
		rx, err := regexp.Compile(args[1])
		ts.Check(err)
		if !rx.Match(b) {
			ts.Fatalf("%s does not match %q", args[0], args[1])
		}
		ts.Check(os.WriteFile(path, rx.ReplaceAll(b, []byte(args[2])), 0o644))
		return
	}
	if !strings.Contains(string(b), args[1]) {
		ts.Fatalf("%s does not contain %q", args[0], args[1])
	}
	ts.Check(os.WriteFile(path, []byte(strings.ReplaceAll(string(b), args[1], args[2])), 0o644))
}

// cmdServe starts the reference server over HTTP on a free loopback port until the script
// ends: "serve NAME [REFUNDSERVER FLAGS...]" sets NAME_URL (http://127.0.0.1:PORT), for
// commands given a server that idemtest does not start (--mcp-url, --http-url, --openapi URL).
func cmdServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: serve NAME [REFUNDSERVER FLAGS...]")
	}
	bin, err := lookPath(ts.Getenv("PATH"), "refundserver")
	ts.Check(err)
	c := exec.Command(bin, append([]string{"--addr", "127.0.0.1:0"}, args[1:]...)...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := c.StderrPipe()
	ts.Check(err)
	ts.Check(c.Start())
	ts.Defer(func() {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		_ = c.Wait()
	})
	// "refundserver: listening on http://ADDR (...)" is its first line.
	addr := make(chan string, 1)
	go func() {
		buf := make([]byte, 0, 512)
		one := make([]byte, 1)
		for len(buf) < cap(buf) {
			if n, err := stderr.Read(one); n == 0 || err != nil {
				break
			}
			if one[0] == '\n' {
				break
			}
			buf = append(buf, one[0])
		}
		_, rest, _ := strings.Cut(string(buf), "listening on ")
		url, _, _ := strings.Cut(rest, " ")
		addr <- url
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case url := <-addr:
		if !strings.HasPrefix(url, "http://127.0.0.1:") {
			ts.Fatalf("refundserver did not say where it listens")
		}
		ts.Setenv(args[0]+"_URL", url)
	case <-time.After(30 * time.Second):
		ts.Fatalf("refundserver did not start within 30s")
	}
}
