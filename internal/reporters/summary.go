package reporters

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/result"
)

// Summary is the closing line: counts and the idempotency metrics.
func Summary(rep *result.Report) string {
	var passed, failed, errored, skipped, interrupted int
	if rep.Err != nil {
		errored++ // the run itself, as JUnit and JSON count it
	}
	var m result.Metrics
	for _, r := range rep.Scenarios {
		switch r.Status {
		case result.Passed:
			passed++
		case result.Failed:
			failed++
		case result.Errored:
			errored++
		case result.Skipped:
			skipped++
		case result.Interrupted:
			interrupted++
		}
		m.Add(r.Metrics)
	}
	parts := []string{fmt.Sprintf("%d passed, %d failed", passed, failed)}
	if errored > 0 {
		parts[0] += fmt.Sprintf(", %d errored", errored)
	}
	if skipped > 0 {
		parts[0] += fmt.Sprintf(", %d skipped", skipped)
	}
	if interrupted > 0 {
		parts[0] += fmt.Sprintf(", %d interrupted", interrupted)
	}
	var weakScenarios int
	for _, r := range rep.Scenarios {
		if Weak(r) != "" {
			weakScenarios++
		}
	}
	if weakScenarios > 0 {
		parts = append(parts, fmt.Sprintf("%d weak (fan-outs that did not overlap)", weakScenarios))
	}
	// The exactly-once verdict's count, always shown: 0 is the claim a green run makes.
	parts = append(parts, plural.Count(m.DuplicateExecutions, "duplicate execution"))
	if n := m.UnjudgedCalls(); n > 0 {
		parts = append(parts, plural.Count(n, "call")+" not judged")
	}
	if m.ReplaysDiffer > 0 {
		parts = append(parts, ReplaysDiffer(m.ReplaysDiffer))
	}
	parts = append(parts,
		plural.Count(m.Calls, "call"),
		"replay rate "+Rate(m.Replayed, m.Repeats()),
		"conflict rate "+Rate(m.Conflicts, m.Keyed),
		FormatDuration(rep.Duration))
	s := strings.Join(parts, " · ")
	if rep.Interrupted {
		s = "interrupted: " + s
	}
	return s
}

// InterruptedNote says where the interrupt stopped a scenario: before it started, between
// trials, or in the middle of one.
func InterruptedNote(r *result.ScenarioResult) string {
	switch {
	case r.Cut != nil:
		return fmt.Sprintf("interrupted in trial %d of %d (%d passed before)", r.Cut.Index, r.Trials, r.TrialsPassed)
	case r.TrialsRun > 0:
		return fmt.Sprintf("interrupted after %d of %d %s (%d passed)", r.TrialsRun, r.Trials, plural.Noun(r.Trials, "trial"), r.TrialsPassed)
	}
	return "interrupted before it started"
}

// Weak says when a scenario's fan-outs did not race: copies answered before all were released.
func Weak(r *result.ScenarioResult) string {
	if r.Fanouts == 0 || r.Overlapped == r.Fanouts {
		return ""
	}
	return fmt.Sprintf("weak: %d/%d %s did not overlap", r.Fanouts-r.Overlapped, r.Fanouts, plural.Noun(r.Fanouts, "fan-out"))
}

// ReplaysDiffer is "1 replay differs", "2 replays differ": the count of keys whose marked
// replay was not their first answer.
func ReplaysDiffer(n int) string {
	if n == 1 {
		return "1 replay differs"
	}
	return plural.Count(n, "replay") + " differ"
}

// FormatDuration is d as a report shows it: µs under a millisecond, ms under a second, else
// seconds with two decimals.
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// IndentLines puts prefix before every line of s, which then ends with a newline.
func IndentLines(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}
