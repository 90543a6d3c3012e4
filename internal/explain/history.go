package explain

import (
	"fmt"
	"strings"

	"github.com/idemtest/idemtest/internal/result"
)

// Calls returns the calls of a step in the trial.
func Calls(t *result.Trial, step string) []result.Call {
	if t == nil {
		return nil
	}
	var out []result.Call
	for _, c := range t.Calls {
		if c.Step == step {
			out = append(out, c)
		}
	}
	return out
}

// Trial is the trial a cell shows: the failed one, else the first (nil without a result).
func Trial(res *result.ScenarioResult) *result.Trial {
	if res == nil {
		return nil
	}
	if res.FailedTrial != nil {
		return res.FailedTrial
	}
	return res.Trial1
}

// StatusNote is a call's status and error, as a cell's reason appends them: " (status 409: …)".
func StatusNote(r result.Call) string {
	switch {
	case r.Status != 0 && r.Error != "":
		return fmt.Sprintf(" (status %d: %s)", r.Status, r.Error)
	case r.Status != 0:
		return fmt.Sprintf(" (status %d)", r.Status)
	case r.Error != "":
		return " (" + r.Error + ")"
	}
	return ""
}

// Details explains a scenario's result: the runner's failure and up to limit calls of trial t.
func Details(res *result.ScenarioResult, t *result.Trial, limit int) []string {
	var out []string
	if f := res.Failure; f != nil {
		explanation := f.Explanation
		if f.Kind == result.FailAssert && (strings.HasPrefix(f.Expression, "toJSON(state") || strings.HasPrefix(f.Expression, "toJSON(without(state")) {
			// The state comparison is shown by the cell; keep only what the verdict adds.
			explanation = nil
			if f.VerdictLines > 1 {
				explanation = f.Explanation[len(f.Explanation)-f.VerdictLines+1:]
			}
		} else {
			out = append(out, f.Message)
			if f.Expression != "" {
				out = append(out, "assert: "+f.Expression)
			}
		}
		for _, l := range explanation {
			out = append(out, "  "+l)
		}
	}
	if t == nil {
		return out
	}
	out = append(out, fmt.Sprintf("calls (session %s):", t.Session))
	for i, c := range t.Calls {
		if i == limit {
			out = append(out, fmt.Sprintf("  … and %d more", len(t.Calls)-limit))
			break
		}
		step := c.Step
		if c.Copy > 0 {
			step = fmt.Sprintf("%s copy %d", c.Step, c.Copy)
		}
		if c.Instance != nil {
			// An endpoint of several instances: where each call went (DESIGN §11).
			step += fmt.Sprintf(" @%d", c.Instance.Index)
		}
		key := c.Key
		if key == "" {
			key = "(no key)"
		}
		status := "-"
		if c.Status != 0 {
			status = fmt.Sprint(c.Status)
		}
		line := fmt.Sprintf("  %-18s key %-16s %-4s status %-3s replayed %-5v", step, key, c.Outcome, status, c.Replayed)
		if c.Lost {
			line += " lost"
		}
		if c.Error != "" {
			line += " " + c.Error
		}
		out = append(out, strings.TrimRight(line, " "))
	}
	return out
}
