package reporters

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/runner"
)

// TestHTMLGoldenRecorded renders the report of a real run against the reference server's
// "none" mode (--trials 1 --session 0123456789ab, four scenarios of examples/scenarios).
func TestHTMLGoldenRecorded(t *testing.T) {
	rep := recordedReport(t, "run.none.json")
	var buf bytes.Buffer
	if err := WriteHTML(&buf, rep, "v0.0.0-test"); err != nil {
		t.Fatal(err)
	}
	golden(t, "run.none.html", buf.Bytes())
	page := buf.String()
	if n := strings.Count(page, `class="group waterfall"`); n != 2 {
		t.Errorf("%d waterfalls, want 2 (the 16-way bursts of verdict_only and burst)", n)
	}
	if !strings.Contains(page, `<span class="badge dup executed">key executed 16 times</span>`) {
		t.Error("the burst's waterfall does not say its key executed 16 times")
	}
	// The burst's assertion failed, and the verdict leads it in words, with the likely cause.
	if !strings.Contains(page, `<div class="verdict-lead">verdict: key 0123456789ab-0 executed 16 times (issue_refund) — the server&#39;s check-and-store is not atomic`) {
		t.Error("the assertion failure does not lead with the verdict")
	}
	if !strings.Contains(page, `<h4>first (lost)</h4>`) {
		t.Error("the lost answer and its retry are not side by side")
	}
	// Every bar lies on its axis: no negative offset or width, none past the end.
	for _, attr := range []string{`left: -`, `width: -`} {
		if strings.Contains(page, attr) {
			t.Errorf("a bar with %q", attr)
		}
	}
}

func TestHTMLRunLevel(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  *runner.Report
		want string
	}{
		{"a service that did not start", &runner.Report{Start: t0, Err: errors.New("service refunds was not ready within 1s: <exit 1>")},
			`<div class="banner error" id="run-error">error: service refunds was not ready within 1s: &lt;exit 1&gt;</div>`},
		{"interrupted while loading", &runner.Report{Start: t0, Interrupted: true}, `<div class="banner interrupted" id="interrupted">`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteHTML(&buf, tc.rep, "v0.0.0-test"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), tc.want) {
				t.Errorf("the page lacks %s", tc.want)
			}
		})
	}
}
