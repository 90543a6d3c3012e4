package reporters

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/idemtest/idemtest/internal/safejson"
)

// Escape makes one line of text that came from outside idemtest (a server's answer, a tool
// name, a key built from a result) harmless on a terminal and in a CI log: C0 and C1 control
// characters (ESC, BEL, CR, LF, TAB, DEL …), bidirectional overrides and isolates (U+202E …) and
// line separators are shown as \xNN or \uNNNN, invalid UTF-8 as U+FFFD, and text that GitHub
// Actions would read as a workflow command (a line starting with "::", or "##[") is defused by
// escaping one character. It is the one escaping function of every report and command.
func Escape(s string) string { return escape(s, false) }

// EscapeText is Escape for text of several lines (a message, a service's output): newlines and
// tabs are kept, and every line is defused on its own.
func EscapeText(s string) string { return escape(s, true) }

func escape(s string, lines bool) string {
	if !needsEscape(s, lines) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if !lines {
		return escapeLine(s, false)
	}
	parts := strings.Split(s, "\n")
	for i, p := range parts {
		parts[i] = escapeLine(p, true)
	}
	return strings.Join(parts, "\n")
}

func escapeLine(s string, keepTabs bool) string {
	if t := strings.TrimLeft(s, " \t"); strings.HasPrefix(t, "::") {
		s = s[:len(s)-len(t)] + `\x3a` + t[1:]
	}
	s = strings.ReplaceAll(s, "##[", `#\x23[`)
	var b strings.Builder
	for _, r := range s {
		if hostile(r) && !(keepTabs && r == '\t') {
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// needsEscape is the fast path: most text has nothing to escape.
func needsEscape(s string, lines bool) bool {
	for _, r := range s {
		if r == unicode.ReplacementChar || (hostile(r) && !(lines && (r == '\n' || r == '\t'))) {
			return true
		}
	}
	return strings.Contains(s, "::") || strings.Contains(s, "##[")
}

// hostile is the one definition of a character that can drive a terminal or end a log line.
func hostile(r rune) bool { return safejson.Hostile(r) }
