package yamlfile

import (
	"fmt"
	"sort"
	"strings"

	"github.com/idemtest/idemtest/internal/redact"
	"github.com/idemtest/idemtest/internal/scenario"
)

// Error is one problem in an input file, with what to do about it.
type Error struct {
	Pos  scenario.Pos
	Msg  string
	Hint string
	// Source is the text of the line the error points at, for the caret.
	Source string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Pos, e.Msg)
	if e.Source != "" && e.Pos.Col > 0 {
		line, caret := excerpt(strings.ReplaceAll(e.Source, "\t", " "), e.Pos.Col-1)
		fmt.Fprintf(&b, "\n    %s\n    %s^", line, strings.Repeat(" ", caret))
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "\n    hint: %s", e.Hint)
	}
	return b.String()
}

// excerptWidth is how much of a source line an error shows around its column.
const excerptWidth = 100

// excerpt returns the part of line to show under a message, at most excerptWidth characters
// around column col (0-based), and where the caret goes in it: a 100 KB line is not printed
// whole.
func excerpt(line string, col int) (string, int) {
	r := []rune(line)
	col = max(0, min(col, len(r)))
	if len(r) <= excerptWidth {
		return line, col
	}
	from := max(0, col-excerptWidth/2)
	to := min(len(r), from+excerptWidth)
	from = max(0, to-excerptWidth)
	out, caret := string(r[from:to]), col-from
	if from > 0 {
		out, caret = "…"+out, caret+1
	}
	if to < len(r) {
		out += "…"
	}
	return out, caret
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

// Redact hides the secrets in every message, hint and source line.
func (es Errors) Redact(s *redact.Secrets) {
	r := redact.New(s)
	for _, e := range es {
		e.Msg, e.Hint, e.Source = r.String(e.Msg), r.String(e.Hint), r.String(e.Source)
		e.Pos.File = r.String(e.Pos.File)
	}
}

// Sort orders the errors by file, line and column.
func (es Errors) Sort() {
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
