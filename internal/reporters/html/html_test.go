package html

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/reporters/reporterstest"
	"github.com/idemtest/idemtest/internal/result"
)

// TestHTMLGoldenRecorded renders the report of a real run against the reference server's
// "none" mode (--trials 1 --session 0123456789ab, four scenarios of examples/scenarios).
func TestHTMLGoldenRecorded(t *testing.T) {
	rep := reporterstest.Recorded(t, "run.none.json")
	var buf bytes.Buffer
	if err := Write(&buf, rep, "v0.0.0-test"); err != nil {
		t.Fatal(err)
	}
	reporterstest.Golden(t, "run.none.html", buf.Bytes())
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
		rep  *result.Report
		want string
	}{
		{"a service that did not start", &result.Report{Start: reporterstest.T0, Err: errors.New("service refunds was not ready within 1s: <exit 1>")},
			`<div class="banner error" id="run-error">error: service refunds was not ready within 1s: &lt;exit 1&gt;</div>`},
		{"interrupted while loading", &result.Report{Start: reporterstest.T0, Interrupted: true}, `<div class="banner interrupted" id="interrupted">`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, tc.rep, "v0.0.0-test"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), tc.want) {
				t.Errorf("the page lacks %s", tc.want)
			}
		})
	}
}

func TestHTMLGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, reporterstest.SampleReport(), "v0.0.0-test"); err != nil {
		t.Fatal(err)
	}
	reporterstest.Golden(t, "report.html", buf.Bytes())
	page := buf.String()
	for _, want := range []string{
		`id="duplicate-executions">2<`,              // the summary counts the verdict's duplicates
		`class="group waterfall"`,                   // the burst's copies as a waterfall
		`<ol class="sequence group">`,               // sequential calls as a sequence
		`<span class="badge lost">lost answer`,      // the discarded answer marked
		`<span class="badge replay">replay`,         // and the replay
		`<div class="answers"><div class="answer">`, // the verdict's answers side by side
		`&lt;&amp;&gt;`,                             // the server's bytes escaped
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(page, "<&>") || strings.Contains(page, "\x1b") {
		t.Error("the server's bytes reached the page unescaped")
	}
	// Self-contained: nothing is fetched at view time.
	for _, ref := range []string{"http://", "https://", "src=", "@import"} {
		if strings.Contains(page, ref) {
			t.Errorf("the page refers to %q", ref)
		}
	}
}

func TestVerdictAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lines  []string
		labels string
		differ string
	}{
		{"verdict failure", []string{
			"2 answers to one key that are not replays of each other, each an execution:",
			`  first (lost)  {"refundId":"re_1"}`,
			`  retry         {"refundId":"re_2"}`,
			"  they differ at: refundId",
			"  (if these are not executions: …)",
		}, "first (lost)|retry", "refundId"},
		{"nested under a failed assertion", []string{
			"len(x) = 16, want == 1",
			"the exactly-once verdict also failed:",
			"a.yaml:6:9: step burst: key k executed 16 times (issue_refund)",
			"  16 answers to one key that are not replays of each other, each an execution:",
			`    burst copy 1  {"refundId":"re_1"}`,
			`    burst copy 2  {"refundId":"re_2"}`,
			"    … and 14 more",
			"    they differ at: refundId",
		}, "burst copy 1|burst copy 2|… and 14 more", "refundId"},
		{"no verdict", []string{"len(x) = 2, want == 1", "  a  b"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answers, differ := verdictAnswers(tc.lines)
			var labels []string
			for _, a := range answers {
				labels = append(labels, a.Label)
			}
			if strings.Join(labels, "|") != tc.labels || differ != tc.differ {
				t.Errorf("got %q, %q; want %q, %q", labels, differ, tc.labels, tc.differ)
			}
		})
	}
}

// TestHTMLTraceIDs: a call that carried a traceparent shows its trace id, to look the server's
// own trace up; a report without trace ids shows none.
func TestHTMLTraceIDs(t *testing.T) {
	rep := reporterstest.SampleReport()
	var plain bytes.Buffer
	if err := Write(&plain, rep, "v0.0.0-test"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "trace <code>") {
		t.Error("a report without trace ids shows one")
	}
	n := 0
	for _, s := range rep.Scenarios {
		for _, tr := range []*result.Trial{s.Trial1, s.FailedTrial} {
			for i := range len(calls(tr)) {
				n++
				tr.Calls[i].TraceID = fmt.Sprintf("%032x", n)
			}
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, rep, "v0.0.0-test"); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`trace <code>[0-9a-f]{32}</code>`).MatchString(buf.String()) {
		t.Errorf("the page shows no trace id of the %d calls", n)
	}
}

func calls(t *result.Trial) []result.Call {
	if t == nil {
		return nil
	}
	return t.Calls
}
