package scenario

import (
	"fmt"
	"sort"
	"strings"

	"github.com/idemtest/idemtest/internal/assert"
)

// Pos is a position in a scenario or config file; Line and Col are 1-based.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is one problem in an input file, with what to do about it.
type Error struct {
	Pos  Pos
	Msg  string
	Hint string
	// Source is the text of the line the error points at, for the caret.
	Source string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Pos, e.Msg)
	if e.Source != "" && e.Pos.Col > 0 {
		line := strings.ReplaceAll(e.Source, "\t", " ")
		fmt.Fprintf(&b, "\n    %s\n    %s^", line, strings.Repeat(" ", min(e.Pos.Col-1, len(line))))
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "\n    hint: %s", e.Hint)
	}
	return b.String()
}

// Errors is every problem found in the inputs, sorted by position.
type Errors []*Error

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

func (es Errors) sort() {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i].Pos, es[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// closest returns the candidate nearest to s when it is near enough to be a likely typo.
func closest(s string, candidates []string) string { return assert.Closest(s, candidates) }
