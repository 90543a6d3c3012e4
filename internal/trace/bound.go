package trace

import (
	"encoding/json"
	"unicode/utf8"
)

// maxText bounds each text field of a call that Bound has to cut.
const maxText = 64 << 10

// Bound returns c as a writer of traces may emit it: a line of at most MaxLine bytes, its
// newline included. When c's line would be longer, its result is left out and marked
// (result_truncated), then its arguments (args_truncated), then its text fields are cut to 64
// KiB each; a call that fits is returned unchanged.
func Bound(c Call) Call {
	if fits(c) {
		return c
	}
	if len(c.Result) > 0 {
		c.Result, c.ResultTruncated = nil, true
		if fits(c) {
			return c
		}
	}
	if len(c.Args) > 0 {
		c.Args, c.ArgsTruncated = nil, true
		if fits(c) {
			return c
		}
	}
	for _, s := range []*string{&c.Tool, &c.Key, &c.KeyCarrier, &c.Error, &c.Fault, &c.Scenario, &c.Step, &c.Endpoint} {
		*s = clip(*s)
	}
	return c
}

// fits reports whether c's line is within MaxLine. Most calls are far below it: their line is
// measured only when its parts could add up to it (escaping grows a byte to at most six).
func fits(c Call) bool {
	n := len(c.Args) + len(c.Result) + len(c.Tool) + len(c.Key) + len(c.KeyCarrier) + len(c.Error) +
		len(c.Fault) + len(c.Scenario) + len(c.Step) + len(c.Endpoint)
	if 6*n+4<<10 < MaxLine {
		return true
	}
	b, err := json.Marshal(c)
	return err == nil && len(b)+1 <= MaxLine
}

// clip cuts s to maxText bytes, on a rune boundary, saying so.
func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	i := maxText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…(cut)"
}
