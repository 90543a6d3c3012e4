//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/testenv"
)

// browser is the Chromium the test drives: $IDEMTEST_CHROMIUM (GitHub's runners have
// google-chrome), else the Debian package's.
func browser() string {
	if b := os.Getenv("IDEMTEST_CHROMIUM"); b != "" {
		return b
	}
	return "/usr/bin/chromium"
}

// TestHTMLReportInBrowser runs the real binary against the reference server's broken "none"
// mode, opens its --html report in headless Chromium, checks the rendered DOM for the
// fan-out's waterfall, the lost answer and the double-execution marker, fails on any console
// message (a script error, a fetch the page's CSP blocked), and keeps a screenshot: under
// $IDEMTEST_ARTIFACTS when set (CI uploads it), else in the test's temporary directory.
func TestHTMLReportInBrowser(t *testing.T) {
	if _, err := os.Stat(browser()); err != nil {
		testenv.Unmet(t, browser()+" is missing: apt-get install chromium (.ci/run does; IDEMTEST_CHROMIUM names another) to run the HTML report's browser test")
	}
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "idemtest")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build idemtest: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	page := filepath.Join(dir, "report.html")
	run := exec.CommandContext(ctx, bin, "run", "--config", "examples/broken/none.yaml", "--trials", "1", "--html", page,
		"examples/scenarios/verdict_only.yaml")
	run.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := run.CombinedOutput()
	if code := run.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("run exited %d (%v), want 1 (the none mode executes twice):\n%s", code, err, out)
	}

	artifacts := os.Getenv("IDEMTEST_ARTIFACTS")
	if artifacts == "" {
		artifacts = dir
	} else if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(artifacts, "html-report.png")
	url := "file://" + page

	dom, console := browse(ctx, t, "--dump-dom", url)
	for _, want := range []struct{ what, re string }{
		{"the summary's duplicate count", `id="duplicate-executions">[1-9][0-9]*<`},
		{"the double-execution marker", `class="badge dup double-execution"[^>]*>[0-9]+ duplicate executions<`},
		{"the burst's waterfall", `class="group waterfall"`},
		{"the burst's key marked as executed 16 times", `(?s)class="group waterfall".*?class="badge dup executed">key executed 16 times<`},
		{"16 copies in the waterfall", `(?s)fan-out of 16(.*?class="row call ok"){16}`},
		{"the lost answer marked", `class="row call info lost"`},
		{"the verdict's answers side by side", `<div class="answers"><div class="answer"><h4>first \(lost\)</h4>`},
		{"the sequential calls", `<ol class="sequence group">`},
	} {
		if !regexp.MustCompile(want.re).MatchString(dom) {
			t.Errorf("the rendered page lacks %s (%s)", want.what, want.re)
		}
	}
	if console != "" {
		t.Errorf("console messages while rendering the report:\n%s", console)
	}

	if _, console = browse(ctx, t, "--screenshot="+shot, "--window-size=1400,2000", url); console != "" {
		t.Errorf("console messages while taking the screenshot:\n%s", console)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
		t.Fatalf("no screenshot: %v", err)
	}
	t.Logf("screenshot: %s", shot)
}

// consoleLine is how Chromium logs a page's console message with --enable-logging=stderr.
var consoleLine = regexp.MustCompile(`(?m)^.*:CONSOLE[:(].*$|^.*Uncaught.*$`)

// browse runs headless Chromium on url with a fresh profile and no background traffic, and
// returns its stdout and the console messages it logged.
func browse(ctx context.Context, t *testing.T, args ...string) (string, string) {
	t.Helper()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, browser(), append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), strings.Join(consoleLine.FindAllString(stderr.String(), -1), "\n")
}
