//go:build unix

package main

import (
	"fmt"
	"html"
	"regexp"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdGHSummary parses a GitHub job summary ($GITHUB_STEP_SUMMARY) that run, check, sweep and
// report merge append to, and prints what a reader sees of it, one fact a line, so that a
// script asserts on the parsed summary rather than on its Markdown:
//
//	summary N: HEADING            each "### " section, numbered from 1
//	matrix N: CORNER COL...       the header row of a matrix table
//	row N: NAME SYM...            a row of a matrix table (✓ ✗ ⚠ – ?)
//	cell N: LABEL | STATUS | BASELINE | WHY   a row of the table of cells that are not ✓
//
// A table cell is unescaped (\_ \| &lt; …) as GitHub's Markdown renders it; a table whose
// rows do not have the header's column count is an error.
func cmdGHSummary(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: ghsummary FILE")
	}
	out, err := parseGHSummary(ts.ReadFile(args[0]))
	if err != nil {
		ts.Fatalf("ghsummary %s: %v", args[0], err)
	}
	fmt.Fprint(ts.Stdout(), out)
}

var mdEscape = regexp.MustCompile(`\\([\\|*_\x60\[\]])`)

// mdCell is a Markdown table cell's text as rendered: backslash escapes and HTML entities
// undone, bold markers dropped.
func mdCell(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, `\|`, "\x00")
	s = mdEscape.ReplaceAllString(s, "$1")
	s = strings.ReplaceAll(s, "\x00", "|")
	return html.UnescapeString(s)
}

// splitRow splits a Markdown table row into its cells, an escaped \| staying in its cell.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			cur.WriteByte(line[i])
			cur.WriteByte(line[i+1])
			i++
		case line[i] == '|':
			cells = append(cells, mdCell(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, mdCell(cur.String()))
}

func parseGHSummary(md string) (string, error) {
	var b strings.Builder
	n := 0
	lines := strings.Split(md, "\n")
	inFence := ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if inFence != "" {
			if l == inFence {
				inFence = ""
			}
			continue
		}
		if strings.HasPrefix(l, "```") {
			inFence = strings.TrimRight(l, "abcdefghijklmnopqrstuvwxyz")
			continue
		}
		if h, ok := strings.CutPrefix(l, "### "); ok {
			n++
			fmt.Fprintf(&b, "summary %d: %s\n", n, html.UnescapeString(mdEscape.ReplaceAllString(h, "$1")))
			continue
		}
		if !strings.HasPrefix(l, "|") || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "|-") && !strings.HasPrefix(lines[i+1], "|:") {
			continue
		}
		if n == 0 {
			return "", fmt.Errorf("line %d: a table before any heading", i+1)
		}
		head := splitRow(l)
		i += 2
		var rows [][]string
		for ; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			row := splitRow(lines[i])
			if len(row) != len(head) {
				return "", fmt.Errorf("line %d: %d cells under a header of %d: %q", i+1, len(row), len(head), lines[i])
			}
			rows = append(rows, row)
		}
		i--
		switch head[0] {
		case "TOOL", "CALL":
			fmt.Fprintf(&b, "matrix %d: %s\n", n, strings.Join(head, " "))
			for _, r := range rows {
				fmt.Fprintf(&b, "row %d: %s\n", n, strings.Join(r, " "))
			}
		case "cell":
			for _, r := range rows {
				if len(r) == 3 {
					r = []string{r[0], r[1], "", r[2]}
				}
				fmt.Fprintf(&b, "cell %d: %s\n", n, strings.Join(r, " | "))
			}
		}
	}
	if n == 0 {
		return "", fmt.Errorf("no summary heading")
	}
	return b.String(), nil
}
