//go:build unix

package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The GitHub Action's script (.github/action/idemtest.sh) run with a fake GitHub environment and
// a fake idemtest that records its arguments, so that what the script passes is read exactly and
// nothing is built: a release served on loopback, or a fake go on PATH for a build from source.
// testdata/script/action.txtar runs it against a real build and real servers.

// fakeIdemtest records each invocation's arguments, one a line, then a line "=====".
const fakeIdemtest = `#!/bin/sh
if [ "$1" = --version ]; then echo "idemtest $FAKE_VERSION"; exit 0; fi
for a in "$@"; do printf '%s\n' "$a"; done >>"$FAKE_LOG"
echo ===== >>"$FAKE_LOG"
exit 0
`

// fakeGo stands in for go build: it writes the fake idemtest to -o and records its arguments.
const fakeGo = `#!/bin/sh
printf '%s\n' "$*" >>"$FAKE_GO_LOG"
while [ $# -gt 0 ]; do if [ "$1" = -o ]; then cp "$FAKE_IDEMTEST" "$2"; chmod +x "$2"; fi; shift; done
`

type actionEnv struct {
	t       *testing.T
	dir     string
	env     map[string]string
	fakeLog string
	goLog   string
	output  string
}

func newActionEnv(t *testing.T) *actionEnv {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is needed to run the action's script")
	}
	repo, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a := &actionEnv{t: t, dir: dir, fakeLog: filepath.Join(dir, "idemtest.log"), goLog: filepath.Join(dir, "go.log"), output: filepath.Join(dir, "output")}
	bindir := filepath.Join(dir, "bin")
	writeFile(t, filepath.Join(dir, "fake-idemtest"), fakeIdemtest, 0o755)
	writeFile(t, filepath.Join(bindir, "go"), fakeGo, 0o755)
	a.env = map[string]string{
		"PATH":                 bindir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME":                 dir,
		"IDEMTEST_ACTION_PATH": repo,
		"RUNNER_TEMP":          filepath.Join(dir, "runner"),
		"RUNNER_OS":            map[string]string{"linux": "Linux", "darwin": "macOS"}[runtime.GOOS],
		"RUNNER_ARCH":          map[string]string{"amd64": "X64", "arm64": "ARM64"}[runtime.GOARCH],
		"GITHUB_ACTIONS":       "true",
		"GITHUB_OUTPUT":        a.output,
		"INPUT_REPORTS":        filepath.Join(dir, "out"),
		"FAKE_LOG":             a.fakeLog,
		"FAKE_GO_LOG":          a.goLog,
		"FAKE_IDEMTEST":        filepath.Join(dir, "fake-idemtest"),
		"FAKE_VERSION":         "dev (fake build)",
	}
	return a
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// script runs the action's script with phase ("" for both) and returns its exit code, stdout
// and stderr.
func (a *actionEnv) script(phase string) (int, string, string) {
	a.t.Helper()
	args := []string{".github/action/idemtest.sh"}
	if phase != "" {
		args = append(args, phase)
	}
	c := exec.Command("bash", args...)
	c.Dir = a.dir
	for k, v := range a.env {
		c.Env = append(c.Env, k+"="+v)
	}
	c.Args[1] = filepath.Join(a.env["IDEMTEST_ACTION_PATH"], args[0])
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	a.t.Fatalf("bash: %v", err)
	return 0, "", ""
}

// invocations are the fake idemtest's argument lists, one per call.
func (a *actionEnv) invocations() [][]string {
	a.t.Helper()
	b, err := os.ReadFile(a.fakeLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		a.t.Fatal(err)
	}
	var calls [][]string
	for _, call := range strings.Split(strings.TrimSuffix(string(b), "=====\n"), "=====\n") {
		calls = append(calls, strings.Split(strings.TrimSuffix(call, "\n"), "\n"))
	}
	return calls
}

// outputs parses $GITHUB_OUTPUT's name=value lines; none when the file was not written.
func (a *actionEnv) outputs() map[string]string {
	a.t.Helper()
	b, err := os.ReadFile(a.output)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		a.t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			a.t.Fatalf("GITHUB_OUTPUT line %q is not name=value", l)
		}
		out[k] = v
	}
	return out
}

// workflowCommand is one ::name props::message line, its message and properties decoded as the
// runner decodes them.
type workflowCommand struct {
	name, message string
	props         map[string]string
}

// workflowCommands parses the lines of out that the runner reads as workflow commands.
func workflowCommands(t *testing.T, out string) []workflowCommand {
	t.Helper()
	unescape := strings.NewReplacer("%0D", "\r", "%0A", "\n", "%3A", ":", "%2C", ",", "%25", "%")
	var cmds []workflowCommand
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "::") {
			continue
		}
		head, msg, ok := strings.Cut(l[2:], "::")
		if !ok {
			t.Fatalf("%q is not a workflow command", l)
		}
		name, props, _ := strings.Cut(head, " ")
		c := workflowCommand{name: name, message: unescape.Replace(msg), props: map[string]string{}}
		for p := range strings.SplitSeq(props, ",") {
			if k, v, ok := strings.Cut(p, "="); ok {
				c.props[k] = unescape.Replace(v)
			}
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// TestActionRefusesBadInputs: every input is validated before anything is written, downloaded or
// built. A bad one is exit 2 with exactly one workflow command, an error whose decoded message
// holds the value as the user wrote it: a line break or % in it cannot end the command or start
// another (::warning:: below), and no artefact name reaches $GITHUB_OUTPUT.
func TestActionRefusesBadInputs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		want  string // in the decoded message
		value string // the raw value the message must hold, when it holds one
	}{
		{"nothing to do", map[string]string{}, "give paths (for idemtest run), check-endpoint", ""},
		{"only whitespace paths", map[string]string{"INPUT_PATHS": " \n\t\n"}, "give paths", ""},
		{"fail-on with a line break", map[string]string{"INPUT_PATHS": "a.yaml", "INPUT_FAIL_ON": "new\n::warning::injected"}, "fail-on must be new or any", "new\n::warning::injected"},
		{"fail-on with a percent sign", map[string]string{"INPUT_PATHS": "a.yaml", "INPUT_FAIL_ON": "%0A::warning::x"}, "fail-on must be new or any", "%0A::warning::x"},
		{"fail-on with a carriage return", map[string]string{"INPUT_PATHS": "a.yaml", "INPUT_FAIL_ON": "any\r::warning::x"}, "fail-on must be new or any", "any\r::warning::x"},
		{"require-coverage", map[string]string{"INPUT_PATHS": "a.yaml", "INPUT_REQUIRE_COVERAGE": "yes"}, "require-coverage must be true or false", "yes"},
		{"shard K > N", map[string]string{"INPUT_PATHS": "a.yaml", "INPUT_SHARD": "3/2"}, "shard must be K/N", "3/2"},
		{"huge shard", map[string]string{"INPUT_PATHS": "a.yaml", "INPUT_SHARD": "1/99999999999999999999"}, "shard must be K/N", "1/99999999999999999999"},
		{"huge shard that wraps in bash", map[string]string{"INPUT_PATHS": "a.yaml", "INPUT_SHARD": "18446744073709551617/2"}, "shard must be K/N", ""},
		{"shard with a line break", map[string]string{"INPUT_PATHS": "a.yaml", "INPUT_SHARD": "1/2\n"}, "shard must be K/N", "1/2\n"},
		{"endpoint with a line break", map[string]string{"INPUT_CHECK_ENDPOINT": "refunds\n::warning::x"}, "check-endpoint is one value", "refunds\n::warning::x"},
		{"check-baseline with a line break", map[string]string{"INPUT_PATHS": "a.yaml", "INPUT_CHECK_BASELINE": "b.json\nc.json"}, "check-baseline is one value", "b.json\nc.json"},
	} {
		for _, phase := range []string{"resolve", "run"} {
			t.Run(tc.name+"/"+phase, func(t *testing.T) {
				a := newActionEnv(t)
				a.env["IDEMTEST_ACTION_REF"] = "v1.2.3" // a release: refused before any download
				a.env["IDEMTEST_RELEASE_URL"] = "http://127.0.0.1:1/nothing-listens-here"
				maps.Copy(a.env, tc.env)
				code, stdout, stderr := a.script(phase)
				if code != 2 {
					t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
				cmds := workflowCommands(t, stdout+stderr)
				if len(cmds) != 1 || cmds[0].name != "error" {
					t.Fatalf("workflow commands %+v, want one error\nstdout:\n%s\nstderr:\n%s", cmds, stdout, stderr)
				}
				if !strings.Contains(cmds[0].message, tc.want) || !strings.Contains(cmds[0].message, tc.value) {
					t.Errorf("error %q lacks %q or the value %q", cmds[0].message, tc.want, tc.value)
				}
				if out := a.outputs(); out != nil {
					t.Errorf("GITHUB_OUTPUT written for a refused input: %v", out)
				}
				if _, err := os.Stat(a.env["RUNNER_TEMP"]); err == nil {
					t.Error("the script created RUNNER_TEMP/idemtest-action for a refused input")
				}
				if _, err := os.Stat(a.env["INPUT_REPORTS"]); err == nil {
					t.Error("the script created the reports directory for a refused input")
				}
			})
		}
	}
}

// fakeRelease serves a release of the fake idemtest on loopback as goreleaser lays one out
// (.goreleaser.yaml): idemtest_VERSION_OS_ARCH.tar.gz and checksums.txt under /TAG/. tamper
// changes the archive after its checksum was taken.
func fakeRelease(t *testing.T, tag string, tamper bool) string {
	t.Helper()
	var archive bytes.Buffer
	gz := gzip.NewWriter(&archive)
	tw := tar.NewWriter(gz)
	body := strings.Replace(fakeIdemtest, "$FAKE_VERSION", tag+" (release)", 1)
	for _, f := range []struct {
		name, body string
	}{{"README.md", "# idemtest\n"}, {"idemtest", body}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o755, Size: int64(len(f.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("idemtest_%s_%s_%s.tar.gz", strings.TrimPrefix(tag, "v"), runtime.GOOS, runtime.GOARCH)
	sum := sha256.Sum256(archive.Bytes())
	// The Windows archive is a zip holding idemtest.exe (the same fake: the script runs it on
	// this machine as a Windows runner would run the real one).
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	hdr := &zip.FileHeader{Name: "idemtest.exe", Method: zip.Deflate}
	hdr.SetMode(0o755)
	if w, err := zw.CreateHeader(hdr); err != nil {
		t.Fatal(err)
	} else if _, err := w.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	winName := fmt.Sprintf("idemtest_%s_windows_%s.zip", strings.TrimPrefix(tag, "v"), runtime.GOARCH)
	winSum := sha256.Sum256(zipped.Bytes())
	sums := fmt.Sprintf("%s  %s\n%s  %s\n", hex.EncodeToString(winSum[:]), winName, hex.EncodeToString(sum[:]), name)
	data := archive.Bytes()
	if tamper {
		data = append(slices.Clone(data), 0)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/"+tag+"/checksums.txt", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(sums)) })
	mux.HandleFunc("/"+tag+"/"+name, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(data) })
	mux.HandleFunc("/"+tag+"/"+winName, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(zipped.Bytes()) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestActionGetsIdemtest: the script's choice of binary. A release tag downloads the release's
// archive for the runner, checks it against checksums.txt and runs it without building; a
// tampered archive is refused before it runs; any other ref builds from the action's checkout.
func TestActionGetsIdemtest(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the fake release is a shell script")
	}
	inputs := map[string]string{
		"INPUT_PATHS":          "scenarios/\n--trace=stolen.jsonl\nburst.yaml  single.yaml\n",
		"INPUT_CHECK_ENDPOINT": "refunds",
		"INPUT_BASELINE":       "run-base.json",
		"INPUT_CHECK_BASELINE": "check-base.json",
		"INPUT_SHARD":          "2/3",
	}
	wantRun := func(a *actionEnv) []string {
		out := a.env["INPUT_REPORTS"]
		return []string{"run", "--shard=2/3", "--baseline=run-base.json", "--no-color",
			"--junit=" + out + "/run-2-of-3.xml", "--json=" + out + "/run-2-of-3.json", "--html=" + out + "/run-2-of-3.html",
			"--", "scenarios/", "--trace=stolen.jsonl", "burst.yaml", "single.yaml"}
	}
	wantCheck := func(a *actionEnv) []string {
		out := a.env["INPUT_REPORTS"]
		return []string{"check", "--shard=2/3", "--baseline=check-base.json", "--no-color", "--endpoint=refunds",
			"--junit=" + out + "/check-2-of-3.xml", "--json=" + out + "/check-2-of-3.json"}
	}

	t.Run("release tag", func(t *testing.T) {
		a := newActionEnv(t)
		maps.Copy(a.env, inputs)
		a.env["IDEMTEST_ACTION_REF"] = "v1.2.3"
		a.env["IDEMTEST_RELEASE_URL"] = fakeRelease(t, "v1.2.3", false)
		code, stdout, stderr := a.script("resolve")
		if code != 0 {
			t.Fatalf("resolve: exit %d\n%s%s", code, stdout, stderr)
		}
		if got, want := a.outputs(), map[string]string{"artifact": "idemtest-reports-2-of-3", "build": "false"}; !maps.Equal(got, want) {
			t.Errorf("GITHUB_OUTPUT = %v, want %v", got, want)
		}
		code, stdout, stderr = a.script("run")
		if code != 0 {
			t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "idemtest v1.2.3 (release)") {
			t.Errorf("the release binary did not run:\n%s", stdout)
		}
		if _, err := os.Stat(a.goLog); err == nil {
			t.Error("a release tag was built from source")
		}
		calls := a.invocations()
		if len(calls) != 2 || !slices.Equal(calls[0], wantRun(a)) || !slices.Equal(calls[1], wantCheck(a)) {
			t.Errorf("idemtest ran with\n%q\nwant\n%q\n%q", calls, wantRun(a), wantCheck(a))
		}
	})

	// A Windows runner downloads the zip, checks it against checksums.txt and runs idemtest.exe.
	t.Run("release tag on a Windows runner", func(t *testing.T) {
		a := newActionEnv(t)
		maps.Copy(a.env, inputs)
		a.env["RUNNER_OS"] = "Windows"
		a.env["IDEMTEST_ACTION_REF"] = "v1.2.3"
		a.env["IDEMTEST_RELEASE_URL"] = fakeRelease(t, "v1.2.3", false)
		code, stdout, stderr := a.script("resolve")
		if code != 0 {
			t.Fatalf("resolve: exit %d\n%s%s", code, stdout, stderr)
		}
		if want := fmt.Sprintf("idemtest_1.2.3_windows_%s.zip: SHA-256 ", runtime.GOARCH); !strings.Contains(stdout, want) {
			t.Errorf("the Windows archive was not checked:\n%s", stdout)
		}
		if _, err := os.Stat(filepath.Join(a.env["RUNNER_TEMP"], "idemtest-action", "idemtest.exe")); err != nil {
			t.Fatalf("no idemtest.exe unpacked: %v", err)
		}
		code, stdout, stderr = a.script("run")
		if code != 0 || !strings.Contains(stdout, "idemtest v1.2.3 (release)") {
			t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
		}
		if calls := a.invocations(); len(calls) != 2 || !slices.Equal(calls[0], wantRun(a)) {
			t.Errorf("idemtest.exe ran with %q", calls)
		}
	})

	t.Run("tampered release", func(t *testing.T) {
		a := newActionEnv(t)
		maps.Copy(a.env, inputs)
		a.env["IDEMTEST_ACTION_REF"] = "v1.2.3"
		a.env["IDEMTEST_RELEASE_URL"] = fakeRelease(t, "v1.2.3", true)
		code, stdout, stderr := a.script("")
		if code != 2 {
			t.Fatalf("exit %d, want 2\n%s%s", code, stdout, stderr)
		}
		var errs []string
		for _, c := range workflowCommands(t, stdout+stderr) {
			if c.name == "error" {
				errs = append(errs, c.message)
			}
		}
		if len(errs) != 1 || !strings.Contains(errs[0], "but checksums.txt of v1.2.3 says") {
			t.Errorf("errors %q, want one saying the checksum differs", errs)
		}
		if calls := a.invocations(); calls != nil || strings.Contains(stdout, "(release)") {
			t.Errorf("the tampered binary ran: %q", calls)
		}
		if _, err := os.Stat(a.goLog); err == nil {
			t.Error("a tampered release fell back to a build: the check would be pointless")
		}
	})

	for _, ref := range []string{"main", "v1", "0123456789abcdef0123456789abcdef01234567", ""} {
		t.Run("ref "+ref, func(t *testing.T) {
			a := newActionEnv(t)
			maps.Copy(a.env, inputs)
			a.env["IDEMTEST_ACTION_REF"] = ref
			a.env["IDEMTEST_RELEASE_URL"] = "http://127.0.0.1:1/nothing-listens-here"
			code, stdout, stderr := a.script("resolve")
			if code != 0 {
				t.Fatalf("resolve: exit %d\n%s%s", code, stdout, stderr)
			}
			if got := a.outputs()["build"]; got != "true" {
				t.Errorf("build=%q for ref %q, want true (action.yml sets up Go with its cache then)", got, ref)
			}
			if code, stdout, stderr = a.script("run"); code != 0 {
				t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
			}
			goLog, err := os.ReadFile(a.goLog)
			if err != nil || !strings.HasPrefix(string(goLog), "build -o ") {
				t.Errorf("go was run as %q (%v), want go build -o …", goLog, err)
			}
			if calls := a.invocations(); len(calls) != 2 || !slices.Equal(calls[0], wantRun(a)) {
				t.Errorf("idemtest ran with %q", calls)
			}
		})
	}
}

// TestActionBaselineWithoutPaths: with no paths there is no run, and baseline is check's, as it
// was before check-baseline existed; with paths, baseline is run's and check gets only
// check-baseline.
func TestActionBaselineWithoutPaths(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the fake idemtest is a shell script")
	}
	for _, tc := range []struct {
		name  string
		paths string
		want  [][]string // the --baseline= flags of each call
	}{
		{"check only", "", [][]string{{"--baseline=base.json"}}},
		{"run and check", "a.yaml", [][]string{{"--baseline=base.json"}, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newActionEnv(t)
			maps.Copy(a.env, map[string]string{"INPUT_PATHS": tc.paths, "INPUT_CHECK_ENDPOINT": "refunds", "INPUT_BASELINE": "base.json", "IDEMTEST_ACTION_REF": "main"})
			if code, stdout, stderr := a.script(""); code != 0 {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			var got [][]string
			for _, call := range a.invocations() {
				var flags []string
				for _, arg := range call {
					if strings.HasPrefix(arg, "--baseline") {
						flags = append(flags, arg)
					}
				}
				got = append(got, flags)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("baselines %q, want %q", got, tc.want)
			}
		})
	}
}
