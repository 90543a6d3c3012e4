package battery

import (
	"fmt"
	"strings"

	"github.com/idemtest/idemtest/internal/runner"
)

// maxHistory bounds the calls shown under a cell.
const maxHistory = 12

// Details explains a scenario's result: the runner's failure and up to limit calls of trial t.
func Details(res *runner.ScenarioResult, t *runner.Trial, limit int) []string {
	return explain(res, t, limit)
}

// details explains a cell: the runner's failure and the trial's calls.
func details(res *runner.ScenarioResult, t *runner.Trial) []string {
	return explain(res, t, maxHistory)
}

func explain(res *runner.ScenarioResult, t *runner.Trial, limit int) []string {
	var out []string
	if f := res.Failure; f != nil {
		explanation := f.Explanation
		if f.Kind == "assert" && (strings.HasPrefix(f.Expression, "toJSON(state") || strings.HasPrefix(f.Expression, "toJSON(without(state")) {
			// The state comparison is shown by the cell; keep only what the verdict adds.
			explanation = nil
			for i, l := range f.Explanation {
				if strings.HasPrefix(l, "the exactly-once verdict also failed") {
					explanation = f.Explanation[i+1:]
					break
				}
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
