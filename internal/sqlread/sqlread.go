package sqlread

import (
	"fmt"
	"strings"
)

// Dialect is the SQL a query is written in: it decides which quotes the tokenizer knows.
type Dialect int

const (
	// Postgres knows '…' (and E'…' with backslash escapes), "…", $tag$…$tag$ and nested /* */.
	Postgres Dialect = iota
	// SQLite knows '…', "…", […] and `…`; its $name is a parameter.
	SQLite
)

// Problem is why a query is not one read, at byte Offset of the query.
type Problem struct {
	Offset    int
	Msg, Hint string
}

func (p *Problem) Error() string { return p.Msg }

// writes are the words that make a statement write, wherever they stand outside quotes: in a
// CTE (PostgreSQL's data-modifying WITH), after SELECT (INTO), or as a second statement.
var writes = map[string]bool{
	"insert": true, "update": true, "delete": true, "merge": true, "copy": true, "call": true,
	"truncate": true, "into": true,
}

// lockWords follow FOR in a row-locking clause (FOR UPDATE, FOR NO KEY UPDATE, FOR SHARE, FOR
// KEY SHARE): a lock is a write to the rows' tuples and waits on writers.
var lockWords = map[string]bool{"update": true, "share": true, "no": true, "key": true}

type token struct {
	word  string // lower-cased keyword or identifier; "" for punctuation
	punct byte   // the punctuation character, 0 for a word
	off   int
	// dotted: the token follows a '.', so it is a qualified name's part, never a keyword.
	dotted bool
}

// Check returns why query is not one read-only statement, or nil when it is.
func Check(query string, d Dialect) *Problem {
	toks, p := tokens(query, d)
	if p != nil {
		return p
	}
	i := 0
	for i < len(toks) && toks[i].punct == '(' {
		i++
	}
	if i == len(toks) {
		return &Problem{Offset: 0, Msg: "the query is empty", Hint: "write a select"}
	}
	first := toks[i]
	switch first.word {
	case "select", "with", "values":
	default:
		w := first.word
		if w == "" {
			w = string(first.punct)
		}
		return &Problem{Offset: first.off, Msg: fmt.Sprintf("%q is not a read-only query (only select, with … select or values)", w),
			Hint: "a probe only reads: use select"}
	}
	for j, t := range toks {
		switch {
		case t.punct == ';':
			if j+1 < len(toks) {
				return &Problem{Offset: toks[j+1].off, Msg: "the query holds more than one statement", Hint: "one statement a probe"}
			}
		case t.dotted || t.word == "":
		case writes[t.word]:
			what := strings.ToUpper(t.word)
			if t.word == "into" {
				what = "SELECT INTO"
			}
			return &Problem{Offset: t.off, Msg: fmt.Sprintf("%s writes: a probe only reads", what),
				Hint: "a probe only reads (quote a column of that name: \"" + t.word + "\")"}
		case t.word == "for" && j+1 < len(toks) && lockWords[toks[j+1].word] && !toks[j+1].dotted:
			clause := []string{"FOR"}
			for _, n := range toks[j+1:] {
				if !lockWords[n.word] {
					break
				}
				clause = append(clause, strings.ToUpper(n.word))
				if n.word == "update" || n.word == "share" {
					break
				}
			}
			return &Problem{Offset: t.off, Msg: strings.Join(clause, " ") + " locks rows: a probe only reads",
				Hint: "drop the locking clause"}
		}
	}
	return nil
}

// tokens splits q into words and punctuation, skipping blanks, comments and quoted text.
func tokens(q string, d Dialect) ([]token, *Problem) {
	var out []token
	dotted := false
	for i := 0; i < len(q); {
		c := q[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			depth := 0
			for i < len(q) {
				if strings.HasPrefix(q[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(q[i:], "*/") {
					depth--
					i += 2
					if depth == 0 || d == SQLite {
						break
					}
				} else {
					i++
				}
			}
			if depth != 0 && d == Postgres {
				return nil, unterminated(start, "comment")
			}
			continue
		case c == '\'':
			backslash := d == Postgres && len(out) > 0 && !dotted && out[len(out)-1].off+1 == start && out[len(out)-1].word == "e"
			if backslash {
				out = out[:len(out)-1] // E'…' is one string, not the word e and a string
			}
			end, ok := quoted(q, i, '\'', backslash)
			if !ok {
				return nil, unterminated(start, "string")
			}
			i = end
			out = append(out, token{punct: '\'', off: start})
		case c == '"' || d == SQLite && c == '`':
			end, ok := quoted(q, i, c, false)
			if !ok {
				return nil, unterminated(start, "quoted identifier")
			}
			i = end
			out = append(out, token{punct: '"', off: start, dotted: dotted})
		case d == SQLite && c == '[':
			end := strings.IndexByte(q[i:], ']')
			if end < 0 {
				return nil, unterminated(start, "quoted identifier")
			}
			i += end + 1
			out = append(out, token{punct: '"', off: start, dotted: dotted})
		case d == Postgres && c == '$' && dollarTag(q[i:]) != "":
			tag := dollarTag(q[i:])
			end := strings.Index(q[i+len(tag):], tag)
			if end < 0 {
				return nil, unterminated(start, "dollar-quoted string")
			}
			i += len(tag) + end + len(tag)
			out = append(out, token{punct: '\'', off: start})
		case isIdentStart(c):
			for i < len(q) && isIdentPart(q[i], d) {
				i++
			}
			out = append(out, token{word: strings.ToLower(q[start:i]), off: start, dotted: dotted})
		default:
			i++
			if c >= 0x80 { // a multi-byte letter of an identifier
				for i < len(q) && q[i] >= 0x80 {
					i++
				}
				out = append(out, token{word: q[start:i], off: start, dotted: dotted})
				break
			}
			out = append(out, token{punct: c, off: start})
		}
		dotted = out[len(out)-1].punct == '.'
	}
	return out, nil
}

func unterminated(off int, what string) *Problem {
	return &Problem{Offset: off, Msg: "unterminated " + what, Hint: "close it"}
}

// quoted returns the end of the text quoted by q[i], with a doubled quote as an escape (and a
// backslash too when backslash), and whether the quote was closed.
func quoted(q string, i int, quote byte, backslash bool) (int, bool) {
	for i++; i < len(q); i++ {
		switch {
		case backslash && q[i] == '\\':
			i++
		case q[i] == quote:
			if i+1 < len(q) && q[i+1] == quote {
				i++
				continue
			}
			return i + 1, true
		}
	}
	return len(q), false
}

// dollarTag returns the opening $tag$ of a dollar-quoted string at the start of s, or "" (a
// parameter $1 is not one).
func dollarTag(s string) string {
	for j := 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '$':
			return s[:j+1]
		case j == 1 && !isIdentStart(c), j > 1 && !isIdentPart(c, Postgres):
			return ""
		}
	}
	return ""
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isIdentPart(c byte, d Dialect) bool {
	return isIdentStart(c) || c >= '0' && c <= '9' || c == '$' && d == Postgres || c >= 0x80
}
